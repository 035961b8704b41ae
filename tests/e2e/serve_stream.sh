#!/usr/bin/env bash
# End-to-end: `larmor-cli stream` through `larmor-cli serve` over the loopback gives the images `larmor-cli recon`
# gives for the same file, bit for bit (docs/streaming.md): two-slice Cartesian (fft), two-slice radial with the
# default preset (gridding, fitted to the header) and with --config cg; two clients at once; every image also
# in --output-dir. The server listens on a free port (--port 0) so the test can run beside others.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir/out"
server_pid=""
trap '[[ -n $server_pid ]] && kill $server_pid 2>/dev/null || true' EXIT

"$cli" simulate --matrix 64 --coils 4 --slices 2 --output "$dir/cart.h5" >/dev/null
"$cli" simulate --matrix 64 --coils 4 --traj radial --spokes 64 --slices 2 --output "$dir/rad.h5" >/dev/null
"$cli" recon "$dir/cart.h5" --device cpu --output "$dir/cart-recon.cfl" >/dev/null
"$cli" recon "$dir/rad.h5" --device cpu --method gridding --output "$dir/rad-recon.cfl" >/dev/null
"$cli" recon "$dir/rad.h5" --device cpu --method cg --output "$dir/cg-recon.cfl" >/dev/null

"$cli" serve --port 0 --device cpu --output-dir "$dir/out" --idle-timeout 20 >"$dir/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/serve.log")
[[ -n $port ]] || { cat "$dir/serve.log"; echo "FAIL: the server did not start"; exit 1; }
to=127.0.0.1:$port

same() {  # same image data, and the streamed header's dimensions are recon's
  cmp "$1.cfl" "$2.cfl" || { echo "FAIL: $2.cfl differs from $1.cfl"; exit 1; }
  [[ $(sed -n 2p "$1.hdr") == $(sed -n 2p "$2.hdr") ]] || { echo "FAIL: $2.hdr's dimensions differ"; exit 1; }
}
"$cli" stream "$dir/cart.h5" --to "$to" --output "$dir/cart-stream.cfl" | tee "$dir/cart.txt"
same "$dir/cart-recon" "$dir/cart-stream"
grep -q "2 images back" "$dir/cart.txt"
"$cli" stream "$dir/rad.h5" --to "$to" --config default.xml --output "$dir/rad-stream.cfl" >/dev/null
same "$dir/rad-recon" "$dir/rad-stream"
"$cli" stream "$dir/rad.h5" --to "$to" --config cg --output "$dir/cg-stream.cfl" >/dev/null
same "$dir/cg-recon" "$dir/cg-stream"

# Two clients at once: each gets its own images.
"$cli" stream "$dir/cart.h5" --to "$to" --output "$dir/cart-a.cfl" >"$dir/a.txt" 2>&1 & a=$!
"$cli" stream "$dir/rad.h5" --to "$to" --config cg --output "$dir/cg-b.cfl" >"$dir/b.txt" 2>&1 & b=$!
wait $a || { cat "$dir/a.txt"; echo "FAIL: the first concurrent client"; exit 1; }
wait $b || { cat "$dir/b.txt"; echo "FAIL: the second concurrent client"; exit 1; }
same "$dir/cart-recon" "$dir/cart-a"
same "$dir/cg-recon" "$dir/cg-b"

# --output-dir: every slice of every connection, written as recon writes a one-slice image.
n=$(ls "$dir/out"/larmor-*-s*.cfl | wc -l)
[[ $n == 10 ]] || { ls "$dir/out"; echo "FAIL: $n images in --output-dir, expected 10 (5 scans x 2 slices)"; exit 1; }
cmp <(cat "$dir"/out/larmor-1-s0-*.cfl "$dir"/out/larmor-1-s1-*.cfl) "$dir/cart-recon.cfl" ||
  { echo "FAIL: --output-dir's slices are not recon's"; exit 1; }
kill -0 $server_pid || { echo "FAIL: the server died"; exit 1; }
grep "ms after its last acquisition" "$dir/serve.log" | head -2
echo "PASS: streamed scans are recon's images bit for bit (Cartesian fft, radial gridding and cg, two at once)"
