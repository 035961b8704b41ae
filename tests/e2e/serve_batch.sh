#!/usr/bin/env bash
# End-to-end: `larmor-cli batch --server host:port` sends each item's file to a warm `larmor-cli serve` (two CPU
# workers here) with the item's settings, and writes the same outputs as `larmor-cli batch` without it, bit for
# bit (.cfl, NIfTI, PNG, contact sheet), an item's own override included (docs/streaming.md). With no server
# listening every item fails with one line naming it (exit 2); the same batch run again with the server finishes
# them (the journal's retry).
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir/in"
server_pid=""
trap '[[ -n $server_pid ]] && kill $server_pid 2>/dev/null || true' EXIT

for i in 1 2 3; do
  "$cli" simulate --matrix 48 --coils 4 --traj radial --spokes 48 --slices 2 --output "$dir/in/rad$i.h5" >/dev/null
done
"$cli" recon "$dir/in/rad1.h5" --device cpu --method cg --save-settings "$dir/cg.json" --output "$dir/x.cfl" >/dev/null
printf '%s\n%s --lambda 0.05\n%s\n' "$dir/in/rad1.h5" "$dir/in/rad2.h5" "$dir/in/rad3.h5" >"$dir/list.txt"

"$cli" batch --manifest "$dir/list.txt" --settings "$dir/cg.json" --output-dir "$dir/local" --devices cpu \
  --format cfl,nii,png >/dev/null 2>&1

# No server: every item fails, the batch says so.
free_port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
set +e
"$cli" batch --manifest "$dir/list.txt" --settings "$dir/cg.json" --output-dir "$dir/remote" \
  --server "127.0.0.1:$free_port" --format cfl,nii,png >"$dir/down.txt" 2>&1
rc=$?
set -e
[[ $rc == 2 ]] || { cat "$dir/down.txt"; echo "FAIL: exit $rc with no server, expected 2"; exit 1; }
[[ $(grep -c "failed: rad.*--server 127.0.0.1:$free_port.*cannot connect" "$dir/down.txt") == 3 ]] ||
  { cat "$dir/down.txt"; echo "FAIL: each item's failure should name the server"; exit 1; }

"$cli" serve --port 0 --devices cpu,cpu >"$dir/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/serve.log")
[[ -n $port ]] || { cat "$dir/serve.log"; echo "FAIL: the server did not start"; exit 1; }

"$cli" batch --manifest "$dir/list.txt" --settings "$dir/cg.json" --output-dir "$dir/remote" \
  --server "127.0.0.1:$port" --jobs 2 --format cfl,nii,png >"$dir/up.txt" 2>&1 ||
  { cat "$dir/up.txt"; echo "FAIL: batch --server"; exit 1; }
grep -q "3 done, 0 failed" "$dir/up.txt" || { cat "$dir/up.txt"; echo "FAIL: not 3 done"; exit 1; }
grep -q "retried: it failed before" "$dir/up.txt" || { cat "$dir/up.txt"; echo "FAIL: no retry noted"; exit 1; }
for f in rad1.cfl rad2.cfl rad3.cfl rad1.hdr rad2.hdr rad1.nii rad2.nii rad3.nii rad1.png rad2.png rad3.png contact-sheet.png; do
  cmp "$dir/local/$f" "$dir/remote/$f" || { echo "FAIL: $f differs from batch without --server"; exit 1; }
done
! cmp -s "$dir/remote/rad1.cfl" "$dir/remote/rad2.cfl" || { echo "FAIL: the override did not reach the server"; exit 1; }
grep -q "\"device\": *\"server 127.0.0.1:$port\"" "$dir/remote/summary.json" ||
  { echo "FAIL: summary.json does not name the server as the device"; exit 1; }
[[ $(grep -c "(Larmor cg) on cpu#" "$dir/serve.log") == 6 ]] || { cat "$dir/serve.log"; echo "FAIL: expected 6 slices served"; exit 1; }
# A series of frames under cs: batch solves it jointly, and so does the server (the same bits).
mkdir -p "$dir/dyn"
"$cli" simulate --matrix 48 --coils 4 --traj golden --frames 4 --spokes-per-frame 13 --readout 96 --output "$dir/dyn/dyn.h5" >/dev/null
"$cli" recon "$dir/dyn/dyn.h5" --device cpu --method cs --iters 20 --save-settings "$dir/cs.json" --output "$dir/y.cfl" >/dev/null
echo "$dir/dyn/dyn.h5" >"$dir/dyn.txt"
"$cli" batch --manifest "$dir/dyn.txt" --settings "$dir/cs.json" --output-dir "$dir/dyn-local" --devices cpu \
  --format cfl,nii,png >/dev/null 2>&1
"$cli" batch --manifest "$dir/dyn.txt" --settings "$dir/cs.json" --output-dir "$dir/dyn-remote" \
  --server "127.0.0.1:$port" --format cfl,nii,png >"$dir/dyn-up.txt" 2>&1 ||
  { cat "$dir/dyn-up.txt"; echo "FAIL: batch --server of a series of frames under cs"; exit 1; }
for f in dyn.cfl dyn.hdr dyn.nii dyn.png; do
  cmp "$dir/dyn-local/$f" "$dir/dyn-remote/$f" || { echo "FAIL: the series' $f differs from batch's joint reconstruction"; exit 1; }
done
echo "PASS: batch --server writes batch's outputs bit for bit (cfl, nii, png, contact sheet; a series of frames under cs jointly); a missing server fails each item"
