#!/usr/bin/env bash
# Starts a throw-away Orthanc (Debian's `orthanc`, a real PACS) for the Send-to-PACS tests, on localhost only:
# a generated configuration in DIR (free DICOM and HTTP ports, storage and index in DIR, AE title ORTHANC,
# the called AE title checked, no remote access, no authentication, no plugins; echo and store from anyone,
# query (C-FIND) and retrieve (C-GET) only from the known modality LARMOR, as a PACS configures a
# workstation), then waits for its REST API.
# Usage: start-orthanc.sh DIR. On success prints and writes DIR/orthanc.env:
#   ORTHANC_PID=... ORTHANC_DICOM_PORT=... ORTHANC_HTTP_PORT=... ORTHANC_AET=ORTHANC
# and exits 0; the caller stops it (kill $ORTHANC_PID). Exit 77 with "SKIP: ..." when Orthanc is not installed
# or does not come up within 30 s (its log is DIR/orthanc.log).
set -euo pipefail
dir=$1
command -v Orthanc >/dev/null || { echo "SKIP: Orthanc is not installed (apt install orthanc; installer/install-deps.sh)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
mkdir -p "$dir/storage"
# Two free TCP ports from the kernel (bound to port 0, closed again just before Orthanc takes them).
read -r dicom http < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
cat >"$dir/config.json" <<JSON
{
  "Name": "LarmorTest",
  "StorageDirectory": "$dir/storage",
  "IndexDirectory": "$dir/storage",
  "StorageCompression": false,
  "HttpServerEnabled": true,
  "HttpPort": $http,
  "RemoteAccessAllowed": false,
  "AuthenticationEnabled": false,
  "DicomServerEnabled": true,
  "DicomAet": "ORTHANC",
  "DicomPort": $dicom,
  "DicomCheckCalledAet": true,
  "DicomAlwaysAllowEcho": true,
  "DicomAlwaysAllowStore": true,
  "DicomModalities": { "larmor": { "AET": "LARMOR", "Host": "127.0.0.1", "Port": 11112,
                                   "AllowFind": true, "AllowGet": true, "AllowMove": false } },
  "DicomCheckModalityHost": false,
  "Plugins": []
}
JSON
Orthanc "$dir/config.json" >"$dir/orthanc.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  if curl -sf "http://localhost:$http/system" >/dev/null 2>&1; then
    printf 'ORTHANC_PID=%s\nORTHANC_DICOM_PORT=%s\nORTHANC_HTTP_PORT=%s\nORTHANC_AET=ORTHANC\n' "$pid" "$dicom" "$http" |
      tee "$dir/orthanc.env"
    exit 0
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill "$pid" 2>/dev/null || true
echo "SKIP: Orthanc did not start within 30 s ($(tail -n 1 "$dir/orthanc.log" 2>/dev/null))"
exit 77
