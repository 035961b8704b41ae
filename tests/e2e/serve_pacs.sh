#!/usr/bin/env bash
# End-to-end: `larmor-cli serve --send AET@host:port` sends each streamed scan to a real PACS (Debian's Orthanc,
# tests/e2e/orthanc/start-orthanc.sh, checked only through its REST API) as one DICOM series:
#  - a 3-slice Cartesian scan streamed by `larmor-cli stream` arrives as one series of 3 instances, InstanceNumber
#    1..3 at 3 distinct slice positions, and the client's images are `recon`'s bit for bit; a 1-slice 4-frame
#    scan arrives as a second series of 4 instances, InstanceNumber 1..4 (1 + slice + slices x frame);
#  - each image goes to the PACS as soon as it is made, not at the end of the scan: a 4-slice scan streamed at its
#    own pace (--pace --tr, 0.7 s a slice) has instances in Orthanc while the client is still streaming;
#  - a PACS that refuses (wrong called AE title) or is not there (a closed port): the client still gets its images
#    (recon's bits), the server's log has a "PACS: error:" line for each of that scan's slices, and it serves the
#    next scan.
# Fails, never skips, when Orthanc is not installed or cannot start here (installer/install-deps.sh installs it).
set -euo pipefail
cli=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
source "$here/lib/orthanc.sh"

# A server sending to $1; its port in $port, its log in $2.
start_server() {
  "$cli" serve --port 0 --devices cpu --idle-timeout 30 --send "$1" --send-timeout 5 >"$2" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$2" && break; sleep 0.1; done
  port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$2")
  [[ -n $port ]] || { cat "$2"; fail "the server did not start"; }
}
# Waits until the log $1 has $2 lines matching $3.
wait_log() {
  for _ in $(seq 300); do [[ $(grep -c -- "$3" "$1" || true) -ge $2 ]] && return 0; sleep 0.1; done
  cat "$1"; fail "no '$3' in the server's log"
}

"$cli" simulate --matrix 48 --coils 4 --slices 3 --output ms.h5 >/dev/null
"$cli" recon ms.h5 --method fft --device cpu --output recon.cfl >/dev/null
"$cli" simulate --matrix 48 --coils 4 --frames 4 --output dyn.h5 >/dev/null

start_server "ORTHANC@localhost:$ORTHANC_DICOM_PORT" serve.log
"$cli" stream ms.h5 --to "127.0.0.1:$port" --config fft --output stream.cfl >stream.txt 2>&1 ||
  { cat stream.txt; fail "stream failed"; }
cmp recon.cfl stream.cfl || fail "the client's images are not recon's"
wait_log serve.log 1 "PACS: sent 3/3 instances to ORTHANC@localhost:$ORTHANC_DICOM_PORT"
"$cli" stream dyn.h5 --to "127.0.0.1:$port" --config fft >stream.txt 2>&1 || { cat stream.txt; fail "stream failed"; }
wait_log serve.log 1 "PACS: sent 4/4 instances to ORTHANC@localhost:$ORTHANC_DICOM_PORT"
"$PY" - "$rest" <<'PY'
import json, sys, urllib.request
from oracle import check
rest = sys.argv[1]
get = lambda p: json.loads(urllib.request.urlopen(rest + p, timeout=30).read())
series = get("/series")
check(len(series) == 2, f"two series in Orthanc, one per scan (got {len(series)})")
by_size = {}
for s in series:
    tags = [get(f"/instances/{i}/simplified-tags") for i in get(f"/series/{s}")["Instances"]]
    by_size[len(tags)] = tags
check(sorted(by_size) == [3, 4], f"the series hold 3 and 4 instances (got {sorted(by_size)})")
for n, tags in by_size.items():
    check(sorted(int(t["InstanceNumber"]) for t in tags) == list(range(1, n + 1)), f"InstanceNumber 1..{n}")
    check(all(t["Rows"] == "48" and t["Columns"] == "48" for t in tags), "48 x 48 images")
    check(len({t["StudyInstanceUID"] for t in tags}) == 1 and len({t["FrameOfReferenceUID"] for t in tags}) == 1,
          "one study and one frame of reference per scan")
check(len({t["ImagePositionPatient"] for t in by_size[3]}) == 3, "the 3 slices at 3 distinct positions")
PY

# Slice by slice: instances arrive while the scan is still streaming (3 s at its pace; a slice every 0.7 s).
"$cli" simulate --matrix 48 --coils 4 --slices 4 --output paced.h5 >/dev/null
before=$(curl -sf "$rest/instances" | "$PY" -c 'import json, sys; print(len(json.load(sys.stdin)))')
"$cli" stream paced.h5 --to "127.0.0.1:$port" --config fft --pace --tr 15 >paced.txt 2>&1 &
client=$!
seen=0
while kill -0 "$client" 2>/dev/null; do
  n=$(curl -sf "$rest/instances" | "$PY" -c 'import json, sys; print(len(json.load(sys.stdin)))')
  kill -0 "$client" 2>/dev/null && seen=$((n - before))
  sleep 0.1
done
wait "$client" || { cat paced.txt; fail "the paced stream failed"; }
echo "instances in Orthanc while the client was still streaming: $seen of 4"
[[ $seen -ge 2 ]] || fail "only $seen instances reached the PACS while the scan streamed (each slice is sent when made)"
wait_log serve.log 1 "PACS: sent 4/4 instances to ORTHANC@localhost:$ORTHANC_DICOM_PORT"

# Refused (wrong called AE title) and absent (a closed port): the client's images go on.
closed=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$cli" simulate --matrix 48 --coils 4 --slices 3 --output one.h5 >/dev/null
"$cli" recon one.h5 --method fft --device cpu --output one-recon.cfl >/dev/null
for node in "WRONG@localhost:$ORTHANC_DICOM_PORT" "ORTHANC@localhost:$closed"; do
  start_server "$node" bad.log
  for n in 1 2; do
    "$cli" stream one.h5 --to "127.0.0.1:$port" --config fft --output "bad$n.cfl" >stream.txt 2>&1 ||
      { cat stream.txt bad.log; fail "stream failed with the PACS $node"; }
    cmp one-recon.cfl "bad$n.cfl" || fail "the client's images are not recon's with the PACS $node"
    wait_log bad.log "$n" "PACS: error: "
  done
  grep "PACS: error: " bad.log | head -1
  kill "${pids[-1]}"
done
n=$(curl -sf "$rest/instances" | "$PY" -c 'import json, sys; print(len(json.load(sys.stdin)))')
[[ $n -eq 11 ]] || fail "Orthanc holds $n instances, not the first three scans' 11"
echo "PASS: a streamed scan is one series in the PACS, each image sent as it is made; a refusing or absent PACS costs the client nothing"
