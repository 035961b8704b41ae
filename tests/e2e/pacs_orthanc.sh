#!/usr/bin/env bash
# Send to PACS against a real PACS: Debian's Orthanc, started here on localhost with a generated configuration
# (tests/e2e/orthanc/start-orthanc.sh), checked only through Orthanc's REST API. Proves, on a simulated
# 64^2 4-coil 4-slice phantom (FFT, CPU) exported as two series (magnitude, phase):
#  - `larmor-cli echo` gets an answer;
#  - `larmor-cli recon ... --output DIR/ --send ORTHANC@localhost:PORT` stores every instance: Orthanc holds
#    exactly our 8 SOP Instance UIDs; for each, the data set Orthanc stores (/instances/ID/file, after the meta
#    header) is byte-identical to the file we wrote, its raw frame (/frames/0/raw) equals our PixelData, and
#    ImagePositionPatient, ImageOrientationPatient, PixelSpacing, SliceThickness (/tags?simplify) equal ours
#    (read by pydicom, not by Larmor);
#  - `larmor-cli send DIR --to ...` sends a series again (and a non-DICOM file in the list fails alone, exit 1);
#  - a wrong called AE title, a closed port and a silent server (accepts TCP, never answers; --timeout 2):
#    one line on stderr, exit non-zero, within the time limit; `recon --send` to a wrong node fails before
#    the reconstruction and writes nothing.
# Fails, never skips, when Orthanc is not installed or cannot start here (installer/install-deps.sh installs it).
set -euo pipefail
cli=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"

source "$here/lib/orthanc.sh"

"$cli" echo "$node" | tee echo.txt
grep -q "answered C-ECHO" echo.txt || fail "echo did not report the answer"

"$cli" simulate --matrix 64 --coils 4 --slices 4 --output ms.h5 >/dev/null
"$cli" recon ms.h5 --method fft --device cpu --component magnitude --component phase --output series/ \
  --send "$node" | tee recon.txt
grep -q "^sent 8/8 instances to $node\$" recon.txt || fail "recon --send did not print 'sent 8/8 instances to $node'"

"$PY" - "$rest" <<'PY'
import glob, json, sys, urllib.request
import numpy as np, pydicom
from oracle import check, fail

rest = sys.argv[1]
def get(path):
    with urllib.request.urlopen(rest + path, timeout=30) as r:
        return r.read()

def dataset_bytes(raw):
    """The bytes after the Part 10 meta information: 128-byte preamble, DICM, then group 0002 whose first
    element (0002,0000) UL gives its remaining length."""
    if raw[128:132] != b"DICM" or raw[132:136] != b"\x02\x00\x00\x00":
        fail("not a Part 10 file with a meta group length")
    return raw[144 + int.from_bytes(raw[140:144], "little"):]

ours = {}
for f in sorted(glob.glob("series/*.dcm")):
    ds = pydicom.dcmread(f)
    ours[ds.SOPInstanceUID] = (f, ds)
check(len(ours) == 8, "we wrote 8 instances (4 slices x magnitude, phase)")
ids = json.loads(get("/instances"))
theirs = {}
for i in ids:
    tags = json.loads(get(f"/instances/{i}/tags?simplify"))
    theirs[tags["SOPInstanceUID"]] = (i, tags)
check(set(theirs) == set(ours), f"Orthanc holds exactly our {len(ours)} SOP instances")
for uid, (f, ds) in ours.items():
    i, tags = theirs[uid]
    name = f.split("/")[-1]
    with open(f, "rb") as fh:
        mine = fh.read()
    if dataset_bytes(get(f"/instances/{i}/file")) != dataset_bytes(mine):
        fail(f"{name}: the data set Orthanc stored differs from the file we wrote")
    frame = get(f"/instances/{i}/frames/0/raw")
    if frame != ds.PixelData:
        fail(f"{name}: Orthanc's raw frame ({len(frame)} bytes) differs from our PixelData ({len(ds.PixelData)} bytes)")
    for key in ("ImagePositionPatient", "ImageOrientationPatient", "PixelSpacing", "SliceThickness"):
        a = np.array(str(tags[key]).split("\\"), float)
        b = np.atleast_1d(np.array(ds[key].value, float))
        if a.shape != b.shape or not np.array_equal(a, b):
            fail(f"{name}: {key} in Orthanc {tags[key]} != ours {ds[key].value}")
print(f"ok: all 8 instances byte-identical in Orthanc (data set, raw frame) with equal geometry tags")
positions = {tuple(np.array(d.ImagePositionPatient, float)) for _, d in ours.values()}
check(len(positions) == 4, "the 4 slices have 4 distinct ImagePositionPatient (the geometry check is not vacuous)")
PY

# send: a series directory again, plus a file that is not DICOM (fails alone, the rest arrive, exit 1).
"$cli" send series --to "$node" | tee send.txt
grep -q "^sent 8/8 instances to $node\$" send.txt || fail "send did not send the directory's 8 files"
echo "not dicom" >junk.dcm
rc=0; "$cli" send series/magnitude_0001.dcm junk.dcm --to "$node" >mixed.txt 2>mixed.err || rc=$?
cat mixed.txt
[[ $rc -ne 0 ]] || fail "send with a non-DICOM file exited 0"
grep -q "junk.dcm: cannot read as DICOM" mixed.txt || fail "the non-DICOM file's line does not say why"
grep -q "magnitude_0001.dcm: stored" mixed.txt || fail "the good file was not stored beside the bad one"
grep -q "^sent 1/2 instances" mixed.txt || fail "the summary does not say 1/2"
echo "ok: a non-DICOM file fails alone (exit $rc)"

# Negative cases: one line, non-zero, no hang.
must_fail "rejected the association" 10 "$cli" echo "WRONG@localhost:$ORTHANC_DICOM_PORT"
closed=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
must_fail "cannot connect" 10 "$cli" echo "ORTHANC@localhost:$closed"
must_fail "cannot connect" 10 "$cli" send series --to "ORTHANC@localhost:$closed"
must_fail "AET@host:port" 5 "$cli" echo "ORTHANC@localhost"
must_fail "1 to 16 characters" 5 "$cli" echo "AN_AE_TITLE_TOO_LONG@localhost:104"
# A server that accepts the connection and never answers: the timeout, not a hang.
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
conns = []
s.settimeout(1)
end = time.time() + 60
while time.time() < end:
    try: conns.append(s.accept()[0])
    except OSError: pass
' >silent.port &
pids+=($!)
for _ in $(seq 1 50); do [[ -s silent.port ]] && break; sleep 0.1; done
silent=$(cat silent.port)
must_fail "did not answer C-ECHO within 2 s" 6 "$cli" echo "ORTHANC@localhost:$silent" --timeout 2
must_fail "did not answer C-STORE within 2 s" 6 "$cli" send series --to "ORTHANC@localhost:$silent" --timeout 2
must_fail "did not answer C-ECHO within 2 s" 6 "$cli" recon ms.h5 --method fft --device cpu --output never/ \
  --send "ORTHANC@localhost:$silent" --send-timeout 2
must_fail "give 1 to 3600 seconds" 5 "$cli" echo "$node" --timeout 0
# recon --send to a wrong node fails before the work: nothing written.
must_fail "rejected the association" 10 "$cli" recon ms.h5 --method fft --device cpu --output never/ \
  --send "WRONG@localhost:$ORTHANC_DICOM_PORT"
[[ ! -e never ]] || fail "recon --send to a wrong node still wrote never/"
must_fail "must be a DICOM series directory" 5 "$cli" recon ms.h5 --method fft --device cpu --output x.png --send "$node"
echo "PASS: pacs_orthanc"
