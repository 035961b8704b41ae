#!/usr/bin/env bash
# import larmor on the lent GPU machine: configure the device preset with the Python module on, build the module,
# larmor-cli and the CUDA plugin, and run the gpu.python tests (tests/python/test_gpu.py: DeviceArrays staying on the
# device, CuPy and PyTorch reading them without a copy, NufftPlan on the GPU against the CPU, the Python call's
# overhead over the C++ call of a NUFFT, larmor.recon on the GPU against larmor-cli). Logs and python-gpu.json
# (the figures) into OUTDIR.
#
#   tests/gpu/python-on-device.sh OUTDIR
#
# STEPS=build,test (the default: both; a warm machine keeps the build for a later STEPS=test). PYTHON (python3: the
# machine's, with NumPy, CuPy and PyTorch), BUILD_DIR (build/device-python), BUILD_TIMEOUT (540 s), TEST_TIMEOUT (300 s).
# The build has a folder of its own, made with the system's g++ (PYTHON_CXX, default /usr/bin/g++ where it exists): the
# device machine's default compiler (/opt/gcc, that of the device preset) links libstdc++ statically into every
# shared library, and an engine carrying its own libstdc++ inside a Python process that has loaded the system's
# crashes at its first stream output (measured: NufftPlan's trajectory check segfaulted in Shape::str).
# pybind11's headers: PYBIND11_INCLUDE, else PyTorch's include folder (it ships pybind11/, a version that knows the
# machine's Python 3.12), else build/pybind11-include when carried (a copy of Debian's /usr/include/pybind11 as
# build/pybind11-include/pybind11; Debian 12's 2.10 predates Python 3.12).
# Exit status: 2 configure or build failed, 1 the tests failed or skipped (a skip here means no usable GPU), 0 passed.
set -u -o pipefail
OUT=${1:?usage: tests/gpu/python-on-device.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
STEPS=",${STEPS:-build,test},"
PY=$(command -v "${PYTHON:-python3}") || { echo "python-on-device: no ${PYTHON:-python3}" >&2; exit 2; }
BUILD=${BUILD_DIR:-build/device-python}
CXX_FOR_PYTHON=${PYTHON_CXX:-}
[[ -n $CXX_FOR_PYTHON || ! -x /usr/bin/g++ ]] || CXX_FOR_PYTHON=/usr/bin/g++
compilers=()
[[ -z $CXX_FOR_PYTHON ]] || compilers=(-DCMAKE_CXX_COMPILER="$CXX_FOR_PYTHON" -DCMAKE_CUDA_HOST_COMPILER="$CXX_FOR_PYTHON")

pybind11_include() {
  local torch
  torch=$("$PY" -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'include'))" 2>/dev/null)
  if [[ -n ${PYBIND11_INCLUDE:-} ]]; then echo "$PYBIND11_INCLUDE"
  elif [[ -n $torch && -f $torch/pybind11/pybind11.h ]]; then echo "$torch"
  else echo "$ROOT/build/pybind11-include"
  fi
}

if [[ $STEPS == *",build,"* ]]; then
  inc=$(pybind11_include)
  [[ -f $inc/pybind11/pybind11.h ]] || { echo "python-on-device: no pybind11 headers in '$inc'" >&2; exit 2; }
  echo "python-on-device: $("$PY" --version), pybind11 from $inc"
  cmake --preset device -B "$BUILD" "${compilers[@]}" -DPython3_EXECUTABLE="$PY" -DLARMOR_PYBIND11_INCLUDE_DIR="$inc" > "$OUT/python-configure.log" 2>&1 ||
    { tail -20 "$OUT/python-configure.log"; exit 2; }
  grep -q "Python=ON" "$OUT/python-configure.log" ||
    { grep -i "python" "$OUT/python-configure.log"; echo "python-on-device: the Python module is off" >&2; exit 2; }
  timeout "${BUILD_TIMEOUT:-540}" cmake --build "$BUILD" -j"$(nproc)" --target _larmor larmor-cli larmor_cuda \
    > "$OUT/python-build.log" 2>&1 || { tail -30 "$OUT/python-build.log"; exit 2; }
  echo "python-on-device: built $(ls "$BUILD"/python/larmor/_larmor*.so)"
fi

if [[ $STEPS == *",test,"* ]]; then
  PYTHONPATH="$ROOT/$BUILD/python" LARMOR_CLI="$ROOT/$BUILD/bin/larmor-cli" LARMOR_GPU_OUT="$OUT" \
    timeout "${TEST_TIMEOUT:-300}" bash tests/python/gpu_tests.sh "$PY" 2>&1 | tee "$OUT/python-gpu.log"
  rc=${PIPESTATUS[0]}
  [[ -f $OUT/python-gpu.json ]] && cat "$OUT/python-gpu.json"
  if [[ $rc -eq 77 ]]; then echo "python-on-device: the GPU tests skipped: no usable GPU here (a failure on this machine)"; exit 1; fi
  [[ $rc -eq 0 ]] || exit 1
fi
echo "python-on-device: passed"
