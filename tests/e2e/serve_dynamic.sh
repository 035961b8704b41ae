#!/usr/bin/env bash
# End-to-end: a dynamic scan (golden-angle radial, 6 frames as repetitions) streamed with --config cs comes back
# as the joint reconstruction with the temporal prior that `larmor-cli recon --method cs` makes of the same file,
# bit for bit, every frame (docs/streaming.md): the server holds each slice's frames until the scan ends and
# reconstructs them together (recon::runFrames), not each frame alone (the frame-by-frame images,
# `recon --frames-independent`, must differ). The same scan with --config gridding is each frame alone, as recon's.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir/out"
server_pid=""
trap '[[ -n $server_pid ]] && kill $server_pid 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cli" simulate --matrix 64 --coils 4 --frames 6 --traj golden --output "$dir/dyn.h5" >/dev/null
"$cli" recon "$dir/dyn.h5" --device cpu --method cs --output "$dir/joint.cfl" >"$dir/recon.txt"
grep -q "frames jointly" "$dir/recon.txt" || { cat "$dir/recon.txt"; fail "recon did not reconstruct the frames jointly"; }
"$cli" recon "$dir/dyn.h5" --device cpu --method cs --frames-independent --output "$dir/alone.cfl" >/dev/null
"$cli" recon "$dir/dyn.h5" --device cpu --method gridding --output "$dir/grid.cfl" >/dev/null

"$cli" serve --port 0 --device cpu --output-dir "$dir/out" --idle-timeout 30 >"$dir/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/serve.log")
[[ -n $port ]] || { cat "$dir/serve.log"; fail "the server did not start"; }

same() {  # same image data and the same dimensions as recon's
  cmp "$1.cfl" "$2.cfl" || fail "$2.cfl differs from $1.cfl"
  [[ $(sed -n 2p "$1.hdr") == $(sed -n 2p "$2.hdr") ]] || fail "$2.hdr's dimensions differ from $1.hdr's"
}
"$cli" stream "$dir/dyn.h5" --to "127.0.0.1:$port" --config cs --output "$dir/stream.cfl" | tee "$dir/stream.txt"
grep -q "6 images back" "$dir/stream.txt" || fail "not 6 images back"
same "$dir/joint" "$dir/stream"
! cmp -s "$dir/alone.cfl" "$dir/stream.cfl" || fail "the streamed frames are the frame-by-frame images, not the joint ones"
[[ $(ls "$dir/out"/*.cfl | wc -l) -eq 6 ]] || fail "not 6 frames in --output-dir"

"$cli" stream "$dir/dyn.h5" --to "127.0.0.1:$port" --config gridding --output "$dir/stream-grid.cfl" >/dev/null
same "$dir/grid" "$dir/stream-grid"
echo "PASS: a dynamic scan streamed with cs is recon's joint reconstruction bit for bit; gridding frame by frame"
