#!/usr/bin/env bash
# No production function is longer than 80 lines without a reason written at its top. Production code is
# engine/src, engine/include, cuda/, app/, ui/ and python/src (the bindings; not tests/, not bench/); a function's length is its ctags
# definition line to its closing line, inclusive (/usr/bin/ctags, universal-ctags: --fields=+ne gives line: and
# end:). A longer function passes only if the comment block just above it, or its signature and the first three
# lines after its opening brace, hold a comment starting with the marker "Long because:" and a reason, e.g.
#   // Long because: one thread's whole spread lives in registers; a split would spill them.
# Each offender is printed as "file:line function N lines". tests/e2e/function_length_allowed.txt ("path
# function" per line) lists offenders that are tolerated for now; that list must only shrink, so an entry that
# is no longer an offender fails too, until it is removed. First the checker itself, on a small tree of its own:
# a long function without the marker must fail and be named; with the marker above or inside, in tests/, or
# allowed, it must not; a stale allowed entry must fail.
# Usage: function_length.sh [LARMOR_CLI (unused)] [SCRATCH_DIR]
set -euo pipefail
dir=${2:-$(mktemp -d)}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
limit=80
marker='Long because:'
ctags=/usr/bin/ctags
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q "Universal Ctags" <<< "$("$ctags" --version 2>/dev/null)" || fail "$ctags is not universal-ctags (apt-get install universal-ctags)"

# long_functions ROOT: "file line end name" for every function definition over $limit lines under ROOT's
# production folders (paths relative to ROOT). __launch_bounds__(...) is ignored so kernels keep their names.
long_functions() {
  (cd "$1" && find engine/src engine/include cuda app ui python/src -type f \
      \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null | sort |
    "$ctags" --fields=+ne -o - --kinds-C++=f --kinds-CUDA=f -I '__launch_bounds__+' -L - |
    awk -F'\t' -v limit="$limit" '{
      l = ""; e = ""
      for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) l = substr($i, 6); if ($i ~ /^end:/) e = substr($i, 5) }
      if (l != "" && e != "" && e - l + 1 > limit) print $2, l, e, $1
    }' | sort -k1,1 -k2,2n)
}

# top_lines FILE LINE: the comment block (and template line) just above LINE, LINE itself, and the lines up to
# three past the function's opening brace.
top_lines() {
  awk -v s="$2" '
    NR < s { if ($0 ~ /^[ \t]*(\/\/|\/\*|\*|template[ \t]*<)/) block = block $0 "\n"; else block = ""; next }
    NR == s { printf "%s", block }
    { print; if (!open && index($0, "{")) open = NR; if ((open && NR >= open + 3) || NR >= s + 20) exit }
  ' "$1"
}

# check ROOT ALLOWED: prints the offenders and the stale allowed entries; fails if there is any.
check() {
  local r=$1 allowed=$2 bad=0 file line end name n top
  local -A long=()
  while read -r file line end name; do
    n=$((end - line + 1))
    long["$file $name"]=1
    top=$(top_lines "$r/$file" "$line")
    grep -Eq "(//|/\*|^[ \t]*\*)[ \t]*$marker[ \t]*[^ \t]" <<< "$top" && continue
    grep -qxF "$file $name" <(grep -v '^#' "$allowed") && continue
    echo "$file:$line $name $n lines"
    bad=1
  done < <(long_functions "$r")
  while read -r file name; do
    [[ -z $file || $file == \#* ]] && continue
    [[ -n ${long["$file $name"]:-} ]] && continue
    echo "$file $name: in $(basename "$allowed") but not an offender any more; remove the line"
    bad=1
  done < "$allowed"
  return $bad
}

# The checker on a tree of its own.
rm -rf "$dir"; mkdir -p "$dir/t/engine/src/x" "$dir/t/cuda" "$dir/t/tests/unit" "$dir/t/python/src"
t=$dir/t
body() { for i in $(seq 1 "$1"); do echo "  s += $i;"; done; }
{
  echo "// A file with long functions."
  echo "int shortOne(int s) { return s + 1; }"
  echo "int longBare(int s) {"; body 88; echo "  return s;"; echo "}"
  echo "// Sums the constants."
  echo "// Long because: a table of constants reads best in one piece."
  echo "int longAbove(int s) {"; body 88; echo "  return s;"; echo "}"
  echo "int longInside(int s)"; echo "{"; echo "  // Long because: one state machine."; body 88; echo "  return s;"; echo "}"
  echo "// Long because: this reason is not at the top of the next function."; echo "int spacer = 0;"; echo
  echo "int longFar(int s) {"; body 88; echo "  return s;"; echo "}"
} > "$t/engine/src/x/a.cpp"
{
  echo "__global__ void __launch_bounds__(256) kernelBare(float* s) {"; body 85; echo "}"
} > "$t/cuda/k.cu"
{ echo "int longTest(int s) {"; body 100; echo "  return s;"; echo "}"; } > "$t/tests/unit/test_a.cpp"
{ echo "void bindLong(int s) {"; body 85; echo "}"; } > "$t/python/src/b.cpp"
printf '# header\n' > "$dir/allowed.txt"
if check "$t" "$dir/allowed.txt" > "$dir/bad.out"; then fail "a tree with long functions passed"; fi
expected=$'cuda/k.cu:1 kernelBare 87 lines\nengine/src/x/a.cpp:3 longBare 91 lines\nengine/src/x/a.cpp:283 longFar 91 lines\npython/src/b.cpp:1 bindLong 87 lines'
[[ $(cat "$dir/bad.out") == "$expected" ]] || { cat "$dir/bad.out" >&2; fail "the checker did not name exactly the four bare long functions"; }
printf '# header\nengine/src/x/a.cpp longBare\nengine/src/x/a.cpp longFar\ncuda/k.cu kernelBare\npython/src/b.cpp bindLong\n' > "$dir/allowed.txt"
check "$t" "$dir/allowed.txt" > "$dir/good.out" || { cat "$dir/good.out" >&2; fail "allowed functions failed"; }
printf 'engine/src/x/a.cpp shortOne\n' >> "$dir/allowed.txt"
if check "$t" "$dir/allowed.txt" > "$dir/stale.out"; then fail "a stale allowed entry passed"; fi
grep -q "^engine/src/x/a.cpp shortOne: in allowed.txt but not an offender" "$dir/stale.out" || { cat "$dir/stale.out" >&2; fail "the stale entry was not named"; }

# The repository.
if ! check "$root" "$here/function_length_allowed.txt"; then
  fail "functions over $limit lines without a '$marker ...' comment at their top (listed above): split them or write the reason"
fi
echo "PASS: function length"
