#!/usr/bin/env bash
# End-to-end: `larmor-cli stream` replays a BART .cfl (with --traj) as well as an ISMRMRD file, and the images
# that come back are `larmor-cli recon`'s of that .cfl bit for bit (radial gridding and cg); --pace sends at the
# acquisition's own pace (no time stamps in a simulated file: --tr 3 ms per acquisition, so the replay takes at
# least acquisitions x 3 ms) and prints the throughput against that pace; --pace with neither says so.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"
server_pid=""
trap '[[ -n $server_pid ]] && kill $server_pid 2>/dev/null || true' EXIT

"$cli" simulate --matrix 48 --coils 4 --traj radial --spokes 48 --slices 2 --output "$dir/k.cfl" --traj-output "$dir/t.cfl" >/dev/null
"$cli" simulate --matrix 48 --coils 4 --traj radial --spokes 48 --slices 2 --output "$dir/rad.h5" >/dev/null
"$cli" recon "$dir/k.cfl" --traj "$dir/t.cfl" --device cpu --method gridding --output "$dir/grid-recon.cfl" >/dev/null
"$cli" recon "$dir/k.cfl" --traj "$dir/t.cfl" --device cpu --method cg --output "$dir/cg-recon.cfl" >/dev/null

"$cli" serve --port 0 --devices cpu --idle-timeout 30 >"$dir/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/serve.log")
[[ -n $port ]] || { cat "$dir/serve.log"; echo "FAIL: the server did not start"; exit 1; }
to=127.0.0.1:$port

"$cli" stream "$dir/k.cfl" --traj "$dir/t.cfl" --to "$to" --output "$dir/grid-stream.cfl" >/dev/null
cmp "$dir/grid-recon.cfl" "$dir/grid-stream.cfl" || { echo "FAIL: a streamed .cfl is not recon's (gridding)"; exit 1; }
"$cli" stream "$dir/k.cfl" --traj "$dir/t.cfl" --to "$to" --config cg --output "$dir/cg-stream.cfl" >/dev/null
cmp "$dir/cg-recon.cfl" "$dir/cg-stream.cfl" || { echo "FAIL: a streamed .cfl is not recon's (cg)"; exit 1; }

if "$cli" stream "$dir/rad.h5" --to "$to" --pace >"$dir/nopace.txt" 2>&1; then echo "FAIL: paced with no pace"; exit 1; fi
grep -q "no time stamps; give --tr MS" "$dir/nopace.txt" || { cat "$dir/nopace.txt"; echo "FAIL: no line saying why"; exit 1; }

start=$(date +%s%N)
"$cli" stream "$dir/rad.h5" --to "$to" --pace --tr 3 --output "$dir/paced.cfl" | tee "$dir/paced.txt"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
(( ms >= 96 * 3 )) || { echo "FAIL: 96 acquisitions at 3 ms took $ms ms"; exit 1; }
grep -q "the acquisition's own pace .* slices/s (0.288 s of acquisitions)" "$dir/paced.txt" ||
  { echo "FAIL: no throughput against the acquisition's pace"; exit 1; }
"$cli" stream "$dir/rad.h5" --to "$to" --tr 3 --output "$dir/full.cfl" | grep "throughput"
cmp "$dir/paced.cfl" "$dir/full.cfl" || { echo "FAIL: paced images differ"; exit 1; }
echo "PASS: .cfl replayed as recon's images; --pace at the acquisition's pace, throughput printed"
