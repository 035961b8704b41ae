#!/usr/bin/env bash
# Installs the Debian 12 packages that Larmor's build and tests need.
# Idempotent and quick when everything is present: dpkg is asked first, apt only for what is missing.
# Usage: installer/install-deps.sh
set -euo pipefail

build=(cmake ninja-build g++ pkg-config make
       libfftw3-dev libhdf5-dev libismrmrd-dev libpugixml-dev libboost-dev
       nlohmann-json3-dev libcli11-dev libeigen3-dev zlib1g-dev libpng-dev
       libgtest-dev libgmock-dev libbenchmark-dev)
build+=(python3-dev pybind11-dev python3-numpy python3-pytest)  # import larmor (python/) and its pytest tests
# File formats: DICOM (DCMTK).
io=(libdcmtk-dev)
# The workstation: Qt 6 widgets + charts, VTK 9.1 core rendering (NOT libvtk9-qt-dev: that is Qt 5).
gui=(qt6-base-dev qt6-charts-dev libqt6opengl6-dev libqt6svg6 libgl-dev libvtk9-dev)
# Tests: ISMRMRD's generator, DICOM validators, an X server for GUI tests, BART as a peer, independent
# DICOM and NIfTI readers (docs/testing.md says which claim each backs).
test_tools=(ismrmrd-tools hdf5-tools dicom3tools dcmtk xvfb xauth bart python3 python3-pydicom python3-nibabel
            orthanc curl time)  # orthanc: a real PACS for the Send-to-PACS tests (tests/e2e/pacs_orthanc.sh);
# time: GNU time's peak resident memory for tests/e2e/bart_memory.sh
# A one-node Slurm for `larmor-cli batch --slurm` (tests/cluster/slurm_array.sh starts its own daemons).
test_tools+=(slurmctld slurmd slurm-client munge)
# The .deb (`make package`, the `package` tests): dpkg-shlibdeps for Depends, the validators of the
# desktop entry and the AppStream metadata.
packaging=(dpkg-dev appstream desktop-file-utils)

wanted=("${build[@]}" "${io[@]}" "${gui[@]}" "${test_tools[@]}" "${packaging[@]}")
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
