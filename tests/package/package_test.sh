#!/usr/bin/env bash
# The installer test (tests/package/CMakeLists.txt, docs/packaging.md). Usage:
#   package_test.sh deb|cli|gui|python WORK BUILD VERSION CPACK HAVE_CUDA HAVE_GUI [HAVE_PYTHON]
# deb: cpack writes WORK/cpack/larmor_VERSION_ARCH.deb from BUILD; dpkg-deb -x unpacks it into WORK/root;
#      the files, the control fields (Depends without CUDA) and the RUNPATHs are checked.
# cli: WORK/root/usr/bin/larmor-cli --version, version, simulate, recon to PNG and to a DICOM series;
#      then, with the CUDA libraries hidden (a private mount namespace), the same on the CPU, quietly.
# gui: WORK/root/usr/bin/larmor --version, and --run --screenshot --quit under xvfb-run.
# python: `import larmor` from WORK/root/usr/lib/python3/dist-packages with the system python3: the installed module
#      and engine (not the build tree's), devices(), and a simulated file read, reconstructed and written.
# Nothing comes from the build tree at run time: LD_LIBRARY_PATH and LARMOR_PLUGIN_DIR are unset, so the
# programs find their libraries by RUNPATH and the CUDA plugin next to the installed engine library.
# Exit 77 (ctest: skipped) where dpkg-deb, or for gui xvfb-run, is missing.
set -euo pipefail
mode=$1 work=$2 build=$3 version=$4 cpack=$5 have_cuda=$6 have_gui=$7 have_python=${8:-0}
src=$(cd "$(dirname "$0")/../.." && pwd)  # the source tree (test data)
root=$work/root

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
is_png() { [ -s "$1" ] && [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }

command -v dpkg-deb >/dev/null 2>&1 || skip "dpkg-deb is not installed (Debian package dpkg)"

# The installed programs, as a user would run them: no build-tree help, a home of their own.
unset LARMOR_PLUGIN_DIR LARMOR_NO_GPU LD_LIBRARY_PATH QT_PLUGIN_PATH
installed_env() {
  local home=$1
  mkdir -p "$home"
  export HOME=$home XDG_CONFIG_HOME=$home/.config XDG_CACHE_HOME=$home/.cache XDG_DATA_HOME=$home/.local/share
}

case "$mode" in
deb)
  rm -rf "$work"
  mkdir -p "$work/cpack"
  start=$(date +%s)
  "$cpack" --config "$build/CPackConfig.cmake" -G DEB -B "$work/cpack" > "$work/cpack.log" 2>&1 || {
    cat "$work/cpack.log"; fail "cpack did not build the package"; }
  grep -E "Depends|package:" "$work/cpack.log" || true
  shopt -s nullglob
  debs=("$work/cpack"/larmor_"$version"_*.deb)
  [ ${#debs[@]} -eq 1 ] || fail "expected one larmor_${version}_<arch>.deb in $work/cpack, found: ${debs[*]:-none}"
  deb=${debs[0]}
  echo "package: $deb ($(du -h "$deb" | cut -f1), cpack $(( $(date +%s) - start )) s)"

  # Control fields.
  dpkg-deb -I "$deb" > "$work/info.txt"
  sed -n '/Package:/,$p' "$work/info.txt"
  [ "$(dpkg-deb -f "$deb" Package)" = larmor ] || fail "Package is not larmor"
  [ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "Version is not $version"
  if command -v dpkg >/dev/null 2>&1; then
    [ "$(dpkg-deb -f "$deb" Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture is not this machine's"
  fi
  depends=$(dpkg-deb -f "$deb" Depends)
  [ -n "$depends" ] || fail "the package has no Depends (dpkg-shlibdeps did not run?)"
  echo "$depends" | grep -q "libc6" || fail "Depends lacks libc6: $depends"
  echo "$depends" | grep -q "libpng16-16" || fail "Depends lacks libpng (the engine writes PNG with it): $depends"
  if echo "$depends" | grep -Eiq "cuda|cufft|cublas|cusolver|cudart|nvidia"; then
    fail "Depends names CUDA, which must stay optional: $depends"
  fi
  if [ "$have_gui" = 1 ]; then
    echo "$depends" | grep -q "libqt6widgets6" || fail "Depends lacks Qt 6 Widgets: $depends"
  fi

  # Files.
  dpkg-deb -x "$deb" "$root"
  dpkg-deb -c "$deb" > "$work/contents.txt"
  need() { [ -e "$root/$1" ] || fail "the package has no /$1"; }
  libdir=$(dirname "$(cd "$root" && find usr/lib* -name 'liblarmor_engine.so.*' -type f | head -n 1)")
  [ "$libdir" != "." ] || fail "the package has no liblarmor_engine.so.*"
  echo "library folder: /$libdir"
  need usr/bin/larmor-cli
  need "$libdir/liblarmor_engine.so.${version%%.*}"
  need usr/share/man/man1/larmor-cli.1.gz
  need usr/share/doc/larmor/gui.md  # Help > User guide of the installed workstation
  need usr/share/doc/larmor/README.md
  if [ "$have_cuda" = 1 ]; then need "$libdir/larmor/liblarmor_cuda.so"; fi
  need "$libdir/larmor/larmor-h5check"  # the ISMRMRD reader's crash sandbox
  if [ "$have_gui" = 1 ]; then
    need usr/bin/larmor
    need "$libdir/liblarmor_ui.so.${version%%.*}"
    need usr/share/applications/io.larmor.Larmor.desktop
    need usr/share/metainfo/io.larmor.Larmor.metainfo.xml
    need usr/share/icons/hicolor/scalable/apps/larmor.svg
    for s in 16 22 24 32 48 64 128 256; do
      png=usr/share/icons/hicolor/${s}x${s}/apps/larmor.png
      need "$png"
      is_png "$root/$png" || fail "/$png is not a PNG"
    done
    need usr/share/man/man1/larmor.1.gz
  fi
  pymodule=""
  if [ "$have_python" = 1 ]; then
    need usr/lib/python3/dist-packages/larmor/__init__.py
    pymodule=$(cd "$root" && ls usr/lib/python3/dist-packages/larmor/_larmor.*.so 2>/dev/null | head -n 1)
    [ -n "$pymodule" ] || fail "the package has no usr/lib/python3/dist-packages/larmor/_larmor.*.so"
    echo "$(dpkg-deb -f "$deb" Depends)" | grep -q "python3-numpy" || fail "Depends lacks python3-numpy (import larmor needs it)"
  fi
  # A runtime package: no headers, no development symlinks, no build paths in RUNPATH.
  # (The CUDA plugin and the Python extension module are loaded by name with their .so.)
  if grep -Eq '/include/|\.so$|\.a$' <(grep -Ev '/larmor/liblarmor_cuda.so$|/dist-packages/larmor/_larmor\.[^/]*\.so$' "$work/contents.txt"); then
    grep -E '/include/|\.so$|\.a$' "$work/contents.txt"
    fail "development files in the runtime package"
  fi
  for elf in usr/bin/larmor-cli usr/bin/larmor "$libdir"/liblarmor_*.so.*.*.* "$libdir"/larmor/liblarmor_cuda.so \
    "$libdir"/larmor/larmor-h5check $pymodule; do
    [ -f "$root/$elf" ] || continue
    runpath=$(readelf -d "$root/$elf" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
    echo "RUNPATH /$elf: ${runpath:-none}"
    case "$runpath" in *"$build"*) fail "/$elf has a build-tree RUNPATH: $runpath" ;; esac
  done
  case "$(readelf -d "$root/usr/bin/larmor-cli" | grep RUNPATH)" in
    *'$ORIGIN/../'*) ;;
    *) fail "/usr/bin/larmor-cli has no \$ORIGIN-relative RUNPATH" ;;
  esac

  # Man pages, desktop entry, AppStream metadata, as the distribution's tools check them.
  for m in "$root"/usr/share/man/man1/*.1.gz; do
    gzip -t "$m" || fail "$m is not a valid gzip file"
    if command -v groff >/dev/null 2>&1; then
      warnings=$(gzip -dc "$m" | LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z 2>&1 || true)
      [ -z "$warnings" ] || { echo "$warnings"; fail "groff warns about $(basename "$m")"; }
    fi
  done
  if [ "$have_gui" = 1 ]; then
    grep -q "release version=\"$version\"" "$root/usr/share/metainfo/io.larmor.Larmor.metainfo.xml" ||
      fail "the AppStream release is not $version"
    if command -v desktop-file-validate >/dev/null 2>&1; then
      desktop-file-validate "$root/usr/share/applications/io.larmor.Larmor.desktop" || fail "desktop-file-validate"
    else
      echo "note: desktop-file-validate not installed (desktop-file-utils), desktop entry not validated"
    fi
    if command -v appstreamcli >/dev/null 2>&1; then
      appstreamcli validate --no-net "$root/usr/share/metainfo/io.larmor.Larmor.metainfo.xml" || fail "appstreamcli validate"
    else
      echo "note: appstreamcli not installed (appstream), metainfo not validated"
    fi
  fi
  echo "PASS: $(wc -l < "$work/contents.txt") entries in $(basename "$deb")"
  ;;

cli)
  cli=$root/usr/bin/larmor-cli
  [ -x "$cli" ] || fail "$cli missing: package.deb did not run or failed"
  out=$work/cli
  rm -rf "$out" && mkdir -p "$out"
  installed_env "$out/home"
  engine=$(ldd "$cli" | awk '/liblarmor_engine/ {print $3}')
  echo "liblarmor_engine: $engine"
  [ "$(realpath "$engine")" = "$(realpath "$root"/usr/lib*/liblarmor_engine.so.*.*.* | head -n 1)" ] ||
    fail "larmor-cli does not load the unpacked engine library (found: $engine)"

  v=$("$cli" --version)
  [ "$v" = "larmor-cli $version" ] || fail "--version printed '$v', expected 'larmor-cli $version'"
  "$cli" version | tee "$out/version.txt"
  grep -q "^larmor-cli $version$" "$out/version.txt" || fail "version does not print the version"
  grep -q "^device: cpu " "$out/version.txt" || fail "version lists no CPU device"
  plugin=$(ls "$root"/usr/lib*/larmor/liblarmor_cuda.so 2>/dev/null | head -n 1 || true)
  if [ "$have_cuda" = 1 ]; then
    # The registry found the installed plugin (it loaded, or it said why not): not one of the build tree.
    found=$(sed -n 's/^plugin: .*CUDA plugin \(.*liblarmor_cuda\.so\).*/\1/p' "$out/version.txt" | head -n 1)
    [ -n "$found" ] || fail "larmor-cli did not find the installed CUDA plugin"
    [ "$(realpath "$found")" = "$(realpath "$plugin")" ] || fail "the CUDA plugin came from $found, not $plugin"
  fi

  # A file that crashes libhdf5 1.10 in-process: the installed sandbox turns it into one error.
  if "$cli" info "$src/tests/unit/data/fuzz-ismrmrd-local-heap.h5" > "$out/crash.log" 2>&1; then
    fail "a damaged ISMRMRD file was accepted"
  fi
  grep -q "libhdf5 crashed reading it" "$out/crash.log" || { cat "$out/crash.log"; fail "the crash sandbox did not run"; }

  "$cli" simulate --matrix 64 --coils 4 --traj cartesian --output "$out/ph.h5"
  "$cli" recon "$out/ph.h5" --method fft --device auto --output "$out/img.png" --json "$out/img.json"
  is_png "$out/img.png" || fail "recon wrote no PNG"
  "$cli" recon "$out/ph.h5" --method fft --output "$out/series/" > "$out/dicom.log"
  cat "$out/dicom.log"
  # The series' .dcm files (the folder also holds the .larmor-export marker: docs/reliability.md).
  [ -f "$out/series/.larmor-export" ] || fail "recon wrote no .larmor-export marker into $out/series/"
  first=$(find "$out/series" -type f -name '*.dcm' | sort | head -n 1)
  [ -n "$first" ] || fail "recon wrote no DICOM files into $out/series/"
  [ "$(head -c 132 "$first" | tail -c 4)" = DICM ] || fail "$first is not a DICOM file"

  # Without the CUDA libraries: the plugin does not load, everything runs on the CPU, exit 0, nothing on
  # stderr. Where they are installed, hide their folders in a private mount namespace (root or
  # unprivileged user namespaces); where that is not allowed, say so and leave it to the machines
  # without CUDA.
  if [ -n "$plugin" ]; then
    hide=$(ldd "$plugin" | awk '/lib(cudart|cufft|cublas|cusolver)/ && $3 ~ /^\// {print $3}' |
           xargs -r -n1 realpath | xargs -r -n1 dirname | sort -u | tr '\n' ' ')
    run_without_cuda=()
    if [ -z "$hide" ]; then
      echo "the CUDA libraries are not installed here: the plugin cannot load"
      run_without_cuda=(bash -c)
    elif unshare -m true 2>/dev/null; then
      run_without_cuda=(unshare -m bash -c)
    elif unshare -r -m true 2>/dev/null; then
      run_without_cuda=(unshare -r -m bash -c)
    fi
    if [ ${#run_without_cuda[@]} -gt 0 ]; then
      echo "hiding the CUDA libraries: ${hide:-none}"
      "${run_without_cuda[@]}" '
        set -e
        for d in '"$hide"'; do mount -t tmpfs none "$d"; done
        "$0" version
        "$0" recon "$1" --method fft --device auto --output "$2"' \
        "$cli" "$out/ph.h5" "$out/cpu.png" > "$out/nocuda.log" 2> "$out/nocuda.err" || {
          cat "$out/nocuda.log" "$out/nocuda.err"; fail "without the CUDA libraries larmor-cli failed"; }
      cat "$out/nocuda.log"
      [ ! -s "$out/nocuda.err" ] || { cat "$out/nocuda.err"; fail "without the CUDA libraries larmor-cli wrote to stderr"; }
      # Where a CUDA driver is installed the plugin's dlopen fails; where none is, the registry does not
      # try it (engine/src/backend/registry.cpp): either way it says so.
      grep -Eq "CUDA plugin .* (could not be loaded|not loaded: no CUDA)" "$out/nocuda.log" ||
        fail "the plugin did not fail to load, or did not say so"
      grep -q "running on the CPU" "$out/nocuda.log" || fail "--device auto did not say it runs on the CPU"
      is_png "$out/cpu.png" || fail "no PNG from the CPU fallback"
    else
      echo "note: cannot hide the CUDA libraries here (unshare -m not permitted); CPU fallback not exercised"
    fi
  fi
  echo "PASS"
  ;;

gui)
  gui=$root/usr/bin/larmor
  [ -x "$gui" ] || fail "$gui missing: package.deb did not run or failed"
  out=$work/gui
  rm -rf "$out" && mkdir -p "$out"
  installed_env "$out/home"
  v=$(env -u DISPLAY -u WAYLAND_DISPLAY "$gui" --version)
  [ "$v" = "larmor $version" ] || fail "larmor --version printed '$v', expected 'larmor $version'"
  command -v xvfb-run >/dev/null 2>&1 || skip "xvfb-run is not installed (apt install xvfb xauth)"
  unset QT_QPA_PLATFORM
  (cd "$out" && xvfb-run -a -s "-screen 0 1600x1000x24" "$gui" --method fft --run \
     --screenshot "$out/shot.png" --quit) > "$out/gui.log" 2>&1 || {
    cat "$out/gui.log"; fail "larmor --run --screenshot --quit exited non-zero"; }
  cat "$out/gui.log"
  is_png "$out/shot.png" || fail "no PNG screenshot"
  size=$(wc -c < "$out/shot.png")
  [ "$size" -gt 20000 ] || fail "the screenshot is suspiciously small ($size bytes)"
  echo "PASS: screenshot $size bytes"
  ;;
python)
  dist=$root/usr/lib/python3/dist-packages
  [ -f "$dist/larmor/__init__.py" ] || fail "$dist/larmor missing: package.deb did not run or failed"
  out=$work/python
  rm -rf "$out" && mkdir -p "$out"
  installed_env "$out/home"
  "$root/usr/bin/larmor-cli" simulate --matrix 32 --coils 2 --output "$out/ph.h5" > /dev/null
  (cd "$out" && env -u PYTHONPATH PYTHONPATH="$dist" PYTHONNOUSERSITE=1 /usr/bin/python3 - "$root" "$out/ph.h5" "$out/img.png") <<'PY' ||
import os, sys
import larmor
root, data, png = sys.argv[1:]
def inside(path):
    return os.path.realpath(path).startswith(os.path.realpath(root) + "/")
assert inside(larmor.__file__), f"larmor came from {larmor.__file__}, not the package"
engine = [line.split()[-1] for line in open("/proc/self/maps") if "liblarmor_engine" in line]
assert engine and all(inside(p) for p in engine), f"the engine came from {set(engine)}, not the package"
print("devices:", [d["id"] for d in larmor.devices()])
r = larmor.recon(larmor.read(data), method="fft")
larmor.write(png, r)
print("recon:", r.image.shape, "on", r.device)
PY
    fail "import larmor from the package failed"
  is_png "$out/img.png" || fail "larmor.write wrote no PNG"
  echo "PASS"
  ;;
*)
  echo "usage: $0 deb|cli|gui|python WORK BUILD VERSION CPACK HAVE_CUDA HAVE_GUI" >&2
  exit 2
  ;;
esac
