#!/bin/sh
# Runs one GUI test under a virtual X server (VTK's OpenGL views need X; QT_QPA_PLATFORM=offscreen
# does not give VTK a display). Skips cleanly, exit 0 with a message, where xvfb-run is missing.
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "SKIP: xvfb-run is not installed (apt install xvfb xauth); GUI tests need an X server"
  exit 0
fi
unset QT_QPA_PLATFORM
exec xvfb-run -a -s "-screen 0 1600x1000x24" "$@"
