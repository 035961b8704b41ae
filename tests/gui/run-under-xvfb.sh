#!/bin/sh
# Runs one GUI test under a virtual X server (VTK's OpenGL views need X; QT_QPA_PLATFORM=offscreen
# does not give VTK a display). Exit status: the program's, except
#   77 (ctest's skip, SKIP_RETURN_CODE) where xvfb-run is missing, with a "SKIP: why" line;
#   77 where a Qt Test run exited 0 and its totals say "0 failed, N skipped" (QSKIP): Qt Test's own exit status
#      is 0 for a skip, so the skip is read from the finished run's totals, never from a SKIP line alone.
# The X screen is 1600 x 1000 unless LARMOR_XVFB_SCREEN names another (WIDTHxHEIGHTxDEPTH).
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "SKIP: xvfb-run is not installed (apt install xvfb xauth); GUI tests need an X server"
  exit 77
fi
unset QT_QPA_PLATFORM
log=$(mktemp) || exit 1
xvfb-run -a -s "-screen 0 ${LARMOR_XVFB_SCREEN:-1600x1000x24}" "$@" > "$log" 2>&1
rc=$?
cat "$log"
if [ $rc -eq 0 ] && grep -Eq '^Totals: [0-9]+ passed, 0 failed, [1-9][0-9]* skipped' "$log"; then
  echo "SKIP: $(grep -m1 '^SKIP   : ' "$log" | sed 's/^SKIP   : //')"
  rm -f "$log"
  exit 77
fi
rm -f "$log"
exit $rc
