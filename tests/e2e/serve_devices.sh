#!/usr/bin/env bash
# End-to-end: `larmor-cli serve --devices cpu,cpu` (two warm CPU workers, as two GPUs would be) deals one scan's
# slices over both workers and still sends recon's images bit for bit, in slice order (docs/streaming.md); two
# clients at once; a device that cannot be opened stops the server before it listens, with one line.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"
server_pid=""
trap '[[ -n $server_pid ]] && kill $server_pid 2>/dev/null || true' EXIT

"$cli" simulate --matrix 64 --coils 4 --slices 4 --output "$dir/cart.h5" >/dev/null
"$cli" simulate --matrix 64 --coils 4 --traj radial --spokes 64 --slices 4 --output "$dir/rad.h5" >/dev/null
"$cli" recon "$dir/cart.h5" --device cpu --output "$dir/cart-recon.cfl" >/dev/null
"$cli" recon "$dir/rad.h5" --device cpu --method cg --output "$dir/cg-recon.cfl" >/dev/null

if "$cli" serve --port 0 --devices cpu,cuda:7 >"$dir/bad.log" 2>&1; then echo "FAIL: served on cuda:7"; exit 1; fi
grep -q -- "--devices cpu,cuda:7: cuda:7" "$dir/bad.log" || { cat "$dir/bad.log"; echo "FAIL: no line naming cuda:7"; exit 1; }

"$cli" serve --port 0 --devices cpu,cpu --idle-timeout 30 >"$dir/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/serve.log")
[[ -n $port ]] || { cat "$dir/serve.log"; echo "FAIL: the server did not start"; exit 1; }
grep -q "devices: cpu#0, cpu#1" "$dir/serve.log" || { cat "$dir/serve.log"; echo "FAIL: not two CPU workers"; exit 1; }
to=127.0.0.1:$port

same() {
  cmp "$1.cfl" "$2.cfl" || { echo "FAIL: $2.cfl differs from $1.cfl"; exit 1; }
  [[ $(sed -n 2p "$1.hdr") == $(sed -n 2p "$2.hdr") ]] || { echo "FAIL: $2.hdr's dimensions differ"; exit 1; }
}
"$cli" stream "$dir/rad.h5" --to "$to" --config cg --output "$dir/cg-stream.cfl" >/dev/null
same "$dir/cg-recon" "$dir/cg-stream"
# One scan's slices ran on both workers.
for w in 0 1; do
  grep -q "connection 1 .*(Larmor cg) on cpu#$w" "$dir/serve.log" || { cat "$dir/serve.log"; echo "FAIL: cpu#$w took no slice"; exit 1; }
done
# In slice order on the wire: image_index follows the slices (the log lists them as sent).
[[ $(grep "connection 1 .*slice" "$dir/serve.log" | sed 's/.*slice \([0-9]*\) .*/\1/' | tr -d '\n') == 0123 ]] ||
  { cat "$dir/serve.log"; echo "FAIL: slices not sent in order"; exit 1; }

"$cli" stream "$dir/cart.h5" --to "$to" --output "$dir/cart-a.cfl" >"$dir/a.txt" 2>&1 & a=$!
"$cli" stream "$dir/rad.h5" --to "$to" --config cg --output "$dir/cg-b.cfl" >"$dir/b.txt" 2>&1 & b=$!
"$cli" stream "$dir/cart.h5" --to "$to" --output "$dir/cart-c.cfl" >"$dir/c.txt" 2>&1 & c=$!
wait $a || { cat "$dir/a.txt"; echo "FAIL: client a"; exit 1; }
wait $b || { cat "$dir/b.txt"; echo "FAIL: client b"; exit 1; }
wait $c || { cat "$dir/c.txt"; echo "FAIL: client c"; exit 1; }
same "$dir/cart-recon" "$dir/cart-a"
same "$dir/cg-recon" "$dir/cg-b"
same "$dir/cart-recon" "$dir/cart-c"
kill -0 $server_pid || { echo "FAIL: the server died"; exit 1; }
echo "PASS: two CPU workers share each scan's slices; images are recon's bit for bit, in order, three clients at once"
