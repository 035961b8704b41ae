#!/bin/sh
# Renders the application icon (icons/larmor.svg) into the hicolor PNG sizes the package installs
# (share/icons/hicolor/NxN/apps/larmor.png). The PNGs are kept in the repository so the build needs no
# SVG renderer; run this after changing larmor.svg. Needs rsvg-convert (Debian: librsvg2-bin).
set -eu
cd "$(dirname "$0")"
for s in 16 22 24 32 48 64 128 256; do
  mkdir -p "hicolor/${s}x${s}/apps"
  rsvg-convert -w "$s" -h "$s" larmor.svg -o "hicolor/${s}x${s}/apps/larmor.png"
done
echo "rendered: $(ls hicolor)"
