#!/usr/bin/env bash
# Packs the workstation for the lent GPU machine, which has CUDA but no Qt, VTK, X server or fonts
# (Ubuntu 24.04 there, glibc 2.39: newer than Debian 12's, so binaries built here run there).
#
#   tests/gpu/gui-pack.sh [BUILD_DIR]   (default build/default; writes build/gui-pack/larmor-gui.tar.xz and its
#                                        two halves build/gui-pack-1/part-00, build/gui-pack-2/part-01)
#
# What travels: larmor, larmor-cli, our libraries and the CUDA plugin; the shared-library closure (ldd) of
# those, of the Qt xcb platform plugin and of Xvfb/xkbcomp; Mesa's software OpenGL (llvmpipe: VTK needs GL);
# the xkb keyboard data, one font family and a fontconfig file. What stays: the C/C++ runtimes and the CUDA
# libraries, which the GPU machine has (and must be its own, matching its driver). The device run script is
# tests/gpu/gui-on-device.sh. The carry limit is 64 MiB in all and the pack is ~71 MiB even xz -6 (Mesa's
# llvmpipe needs libLLVM-15, 117 MB; VTK needs OpenGL and the GPU machine has no GL at all), so it travels in two
# halves on two calls to a warm machine (the device README: files outside the tree stay while it is held):
#   run carry=[build/gui-pack-1]: tests/gpu/gui-on-device.sh OUT      (stores the first half in /tmp)
#   run carry=[build/gui-pack-2]: tests/gpu/gui-on-device.sh OUT      (joins, unpacks, runs)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build/default}
OUTDIR=$ROOT/build/gui-pack
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
P=$STAGE/larmor-gui
mkdir -p "$P/bin" "$P/lib/larmor" "$P/lib/dri" "$P/plugins" "$P/share" "$P/etc"

for b in larmor larmor-cli; do
  [[ -x $BUILD/bin/$b ]] || { echo "gui-pack: $BUILD/bin/$b is missing (build it first)" >&2; exit 1; }
  cp "$BUILD/bin/$b" "$P/bin/"
done
cp -a "$BUILD"/lib/liblarmor_*.so* "$P/lib/"
for t in "$BUILD"/bin/larmor_gui*_tests; do [[ -x $t ]] && cp "$t" "$P/bin/"; done  # the GUI tests, when built
[[ -f $BUILD/lib/larmor/liblarmor_cuda.so ]] || { echo "gui-pack: the CUDA plugin was not built" >&2; exit 1; }
cp "$BUILD/lib/larmor/liblarmor_cuda.so" "$P/lib/larmor/"
for x in Xvfb xkbcomp; do cp "$(command -v $x)" "$P/bin/"; done

QTPLUG=$(dirname "$(find /usr/lib/x86_64-linux-gnu/qt6/plugins -name libqxcb.so | head -1)")/..
for d in platforms xcbglintegrations imageformats; do
  [[ -d $QTPLUG/$d ]] && cp -a "$QTPLUG/$d" "$P/plugins/"
done
DRI=/usr/lib/x86_64-linux-gnu/dri
cp -L "$DRI/swrast_dri.so" "$P/lib/dri/"
for g in libGLX_mesa.so.0 libEGL_mesa.so.0 libglapi.so.0; do
  [[ -e /usr/lib/x86_64-linux-gnu/$g ]] && cp -L "/usr/lib/x86_64-linux-gnu/$g" "$P/lib/"
done

# Not carried: the runtimes and CUDA (the GPU machine's own), and every library whose soname the GPU machine
# already has (tests/gpu/device-libs.txt: `ls /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/local/cuda/lib64`
# there; the same soname is the same ABI, and its copy there is the newer one).
HAVE=$ROOT/tests/gpu/device-libs.txt
skip='^(libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64|libpthread|libdl|librt|libresolv|libcuda|libcudart|libcufft|libcublas|libcublasLt|libcusolver|libcusparse|libnvJitLink|libnvrtc)\.so'
closure() {
  # ldd exits 1 when one of its arguments is not a dynamic object (pipefail would end the script here).
  { ldd "$@" 2>/dev/null || true; } | awk '/=> \//{print $1" "$3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [[ -f $HAVE ]] && grep -qxF "$name" "$HAVE" && continue
    [[ -e $P/lib/$name ]] || cp -L "$path" "$P/lib/$name"
  done
}
closure "$P"/bin/* "$P"/lib/*.so* "$P"/lib/larmor/*.so "$P"/lib/dri/*.so "$P"/plugins/*/*.so

cp -a /usr/share/X11/xkb "$P/share/xkb"
mkdir -p "$P/share/dcmtk" && cp /usr/share/libdcmtk*/dicom.dic /usr/share/libdcmtk*/private.dic "$P/share/dcmtk/"  # DCMDICTPATH
mkdir -p "$P/share/fonts"
cp -L /usr/share/fonts/truetype/dejavu/DejaVuSans*.ttf "$P/share/fonts/" 2>/dev/null || true
cat > "$P/etc/fonts.conf" <<'EOF'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir prefix="relative">../share/fonts</dir><cachedir>/tmp/larmor-fontconfig-cache</cachedir></fontconfig>
EOF
mkdir -p "$OUTDIR"
du -ab "$P/lib" "$P/bin" | sort -n | tail -8 >&2
rm -f "$OUTDIR/larmor-gui.tar.xz"
tar -C "$STAGE" -cf - larmor-gui | xz -T0 -6 > "$OUTDIR/larmor-gui.tar.xz.part"
mv "$OUTDIR/larmor-gui.tar.xz.part" "$OUTDIR/larmor-gui.tar.xz"
mkdir -p "$ROOT/build/gui-pack-1" "$ROOT/build/gui-pack-2"
(cd "$OUTDIR" && split -n 2 -d larmor-gui.tar.xz part- && mv part-00 "$ROOT/build/gui-pack-1/" && mv part-01 "$ROOT/build/gui-pack-2/")
sha256sum "$OUTDIR/larmor-gui.tar.xz" | cut -d' ' -f1 > "$ROOT/build/gui-pack-2/sha256"
echo "gui-pack: $(du -sh "$P" | cut -f1) unpacked, $(du -h "$OUTDIR/larmor-gui.tar.xz" | cut -f1) packed: $OUTDIR/larmor-gui.tar.xz"
