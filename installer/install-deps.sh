#!/usr/bin/env bash
# Installs the Debian 12 packages that Larmor's build and tests need.
# Idempotent and quick when everything is present: dpkg is asked first, apt only for what is missing.
# Usage: installer/install-deps.sh [--gui]   (LARMOR_DEPS_GUI=1 does the same as --gui)
set -euo pipefail

build=(cmake ninja-build g++ pkg-config make
       libfftw3-dev libhdf5-dev libismrmrd-dev libpugixml-dev libboost-dev
       nlohmann-json3-dev libcli11-dev libeigen3-dev
       libgtest-dev libgmock-dev libbenchmark-dev)
test_tools=(ismrmrd-tools hdf5-tools)
gui=()
if [[ "${1:-}" == "--gui" || "${LARMOR_DEPS_GUI:-0}" == "1" ]]; then
  gui=(qt6-base-dev libqt6opengl6-dev libgl-dev xvfb xauth)
fi

wanted=("${build[@]}" "${test_tools[@]}" "${gui[@]}")
missing=()
for p in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#wanted[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
