#!/usr/bin/env bash
# The streaming server on the lent GPU machine: latency and throughput over the loopback (docs/streaming.md's
# targets: a 256² x 8-coil Cartesian slice back <= 15 ms after its last acquisition, a 2D radial CG-SENSE slice
# <= 30 ms, a dynamic frame <= 60 ms; >= 20x the acquisition's pace for 2D radial at TR 3 ms).
#
#   tests/gpu/serve-on-device.sh OUTDIR
#
# The device preset builds without ISMRMRD (LARMOR_IO=OFF), so the server comes from the workstation's pack
# (tests/gpu/gui-pack.sh: larmor-cli with its libraries and the CUDA plugin), unpacked in /tmp/larmor-gui by
# tests/gpu/gui-on-device.sh on the same warm machine. Each scan is streamed twice to one warm server, the second
# is reported; every line goes to OUTDIR/serve.txt.
set -u -o pipefail
OUT=${1:?usage: tests/gpu/serve-on-device.sh OUTDIR}
mkdir -p "$OUT"
P=${LARMOR_PACK:-/tmp/larmor-gui}
[[ -x $P/bin/larmor-cli ]] || { echo "serve-on-device: no $P/bin/larmor-cli: run tests/gpu/gui-on-device.sh first" >&2; exit 2; }
CUDA_LIBS=$(dirname "$(find /usr/local/cuda/ -name 'libcudart.so.*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$P/lib:$CUDA_LIBS:${LD_LIBRARY_PATH:-}
export DCMDICTPATH=$P/share/dcmtk/dicom.dic:$P/share/dcmtk/private.dic
CLI=$P/bin/larmor-cli
D=/tmp/larmor-serve-data && mkdir -p "$D"
"$CLI" simulate --matrix 256 --coils 8 --slices 8 --output "$D/cart8.h5" >/dev/null
"$CLI" simulate --matrix 256 --coils 8 --traj golden --spokes 101 --readout 512 --slices 4 --output "$D/radial4.h5" >/dev/null
"$CLI" simulate --matrix 128 --coils 8 --traj golden --spokes 96 --readout 256 --slices 8 --output "$D/radial128.h5" >/dev/null
"$CLI" simulate --matrix 128 --coils 8 --traj golden --frames 20 --spokes-per-frame 21 --readout 256 --output "$D/dyn20.h5" >/dev/null

"$CLI" serve --port 0 --devices "${DEVICES:-cuda}" >"$OUT/serve.log" 2>&1 &
SPID=$!
trap 'kill $SPID 2>/dev/null' EXIT
for _ in $(seq 300); do grep -q "listening on" "$OUT/serve.log" && break; sleep 0.1; done
ADDR=$(grep -o "127.0.0.1:[0-9]*" "$OUT/serve.log" | head -1)
[[ -n $ADDR ]] || { echo "serve-on-device: the server did not listen" >&2; cat "$OUT/serve.log" >&2; exit 2; }
head -3 "$OUT/serve.log" | tee "$OUT/serve.txt"

stream() {  # name, file, then stream's options
  local name=$1 file=$2; shift 2
  "$CLI" stream "$file" --to "$ADDR" "$@" >/dev/null 2>&1  # the first scan pays the one-time costs
  echo "== $name ($*)" | tee -a "$OUT/serve.txt"
  "$CLI" stream "$file" --to "$ADDR" "$@" --output "$OUT/$name.cfl" 2>&1 | tail -3 | tee -a "$OUT/serve.txt"
}
stream cartesian-fft "$D/cart8.h5" --config fft
stream radial-gridding "$D/radial4.h5" --config gridding
stream radial-cg "$D/radial4.h5" --config cg
stream radial128-gridding-tr3 "$D/radial128.h5" --config gridding --tr 3
stream radial128-cg-tr3 "$D/radial128.h5" --config cg --tr 3
stream dynamic-cs "$D/dyn20.h5" --config cs
