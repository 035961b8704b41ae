#!/usr/bin/env bash
# Every repository path that README.md, CHANGELOG.md and docs/*.md name exists (tests/e2e/py/doc_paths.py says
# what counts as a path). First the checker itself, on a small tree of its own: a stale path in a doc must fail,
# naming the doc, the line and the path; placeholders, build outputs, URLs and shortened paths must not.
set -euo pipefail
dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
check=$here/py/doc_paths.py
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$dir"; mkdir -p "$dir/t/docs/images" "$dir/t/engine/include/larmor/io" "$dir/t/cuda"
t=$dir/t
touch "$t/engine/include/larmor/io/series.hpp" "$t/cuda/fft_last.cu" "$t/cuda/fft_last.hpp" "$t/docs/images/a.png"
printf '# R\nSee docs/guide.md.\n' > "$t/README.md"
cat > "$t/docs/guide.md" <<'DOC'
Reads io/series.hpp and engine/include/larmor/io/series.hpp; cuda/fft_last.hpp/.cu; cuda/fft_*.cu.
Placeholders engine/src/cpu/X.cpp and DIR/settings.json; outputs build/default/bin/larmor-cli, out/a.png.
A link [picture](images/a.png) and https://example.org/some/file.md, and 1/2 of N/4.
DOC
/usr/bin/python3 "$check" "$t" > "$dir/good.out" || { cat "$dir/good.out" >&2; fail "a tree with no stale path failed"; }
printf 'Line one.\nThe plan (engine/src/ops/nufft_cpu.cpp) and [a](images/gone.png).\n' >> "$t/docs/guide.md"
if /usr/bin/python3 "$check" "$t" > "$dir/bad.out"; then fail "a stale path passed"; fi
grep -qx "docs/guide.md:5: engine/src/ops/nufft_cpu.cpp does not exist" "$dir/bad.out" || { cat "$dir/bad.out" >&2; fail "the stale path was not named with its doc and line"; }
grep -qx "docs/guide.md:5: images/gone.png does not exist" "$dir/bad.out" || { cat "$dir/bad.out" >&2; fail "a stale image link was not named"; }
[[ $(grep -c "does not exist" "$dir/bad.out") -eq 2 ]] || { cat "$dir/bad.out" >&2; fail "only the two stale paths may be reported"; }

# The repository's own docs.
/usr/bin/python3 "$check" "$root" || fail "docs name paths that do not exist (listed above as DOC:LINE: PATH)"
echo "PASS: doc paths"
