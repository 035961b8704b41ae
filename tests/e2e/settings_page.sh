#!/usr/bin/env bash
# docs/settings.md is `larmor-cli settings`, the reference generated from the engine's settings table: the page
# cannot drift from the flags, the GUI and the JSON that the same table generates. On a difference, regenerate it:
#   build/default/bin/larmor-cli settings > docs/settings.md
set -euo pipefail
cli=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
page=$here/../../docs/settings.md
rm -rf "$dir"; mkdir -p "$dir"
"$cli" settings > "$dir/settings.md" || { echo "FAIL: larmor-cli settings exited $?" >&2; exit 1; }
grep -q -- "| \`--method\` |" "$dir/settings.md" || { echo "FAIL: larmor-cli settings has no --method row" >&2; exit 1; }
if ! diff -u "$page" "$dir/settings.md" > "$dir/diff.txt"; then
  cat "$dir/diff.txt" >&2
  echo "FAIL: docs/settings.md differs from \`larmor-cli settings\` (above); regenerate it: larmor-cli settings > docs/settings.md" >&2
  exit 1
fi
echo "PASS: docs/settings.md = larmor-cli settings"
