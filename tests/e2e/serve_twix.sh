#!/usr/bin/env bash
# End-to-end: `larmor-cli stream` replays a Siemens twix file (loaded as `larmor-cli recon` loads it, then streamed
# as the ISMRMRD file of the same data, as a .cfl is), and the images that come back are `recon`'s of the .dat
# bit for bit: the VD/VE Cartesian GRE (fft) and the VB Pulseq radial (--traj radial:180, as twix_vs_bart.sh reads
# it; gridding and CG-SENSE) of tests/unit/data/twix.
set -euo pipefail
cli=$1 dir=$2
data=$(cd "$(dirname "${BASH_SOURCE[0]}")/../unit/data/twix" && pwd)
rm -rf "$dir"; mkdir -p "$dir"
server_pid=""
trap '[[ -n $server_pid ]] && kill $server_pid 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
gre=$data/gre.dat radial=$data/meas_MID00118_FID33075_sol24.dat
for f in "$gre" "$radial"; do [[ -f $f ]] || fail "$f is absent (it is part of the repository)"; done

"$cli" serve --port 0 --devices cpu --idle-timeout 30 >"$dir/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/serve.log")
[[ -n $port ]] || { cat "$dir/serve.log"; fail "the server did not start"; }

# name, file, method, trajectory (- for none)
while read -r name file method traj; do
  t=(); [[ $traj == - ]] || t=(--traj "$traj")
  "$cli" recon "$file" "${t[@]}" --device cpu --method "$method" --output "$dir/$name-recon.cfl" >/dev/null
  "$cli" stream "$file" "${t[@]}" --to "127.0.0.1:$port" --config "$method" --output "$dir/$name-stream.cfl" >"$dir/$name.txt" 2>&1 ||
    { cat "$dir/$name.txt"; fail "stream $file failed"; }
  cmp "$dir/$name-recon.hdr" "$dir/$name-stream.hdr" || fail "$name: the streamed image's dims are not recon's"
  cmp "$dir/$name-recon.cfl" "$dir/$name-stream.cfl" || fail "$name: the streamed twix is not recon's images"
  echo "ok: $name ($method) streamed = recon, bit for bit"
done <<LIST
gre $gre fft -
radial $radial gridding radial:180
radial-cg $radial cg radial:180
LIST
echo "PASS: twix replayed as recon's images"
