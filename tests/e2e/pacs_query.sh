#!/usr/bin/env bash
# Query/retrieve against a real PACS: Debian's Orthanc, started here on localhost with a generated configuration
# (tests/e2e/orthanc/start-orthanc.sh: queries and retrieves only from the known calling AE title LARMOR), fed
# with `larmor-cli recon --send`, checked with pydicom and Orthanc's REST API, not with Larmor. Proves, on two
# simulated patients (64^2 4-coil phantoms, FFT, CPU; P1 with 4 slices, P2 with 2):
#  - `query --patient-id P1` finds exactly P1's one series, with our study and series UIDs, 4 instances, the
#    patient's name and ID; --level study gives the study with 1 series and 4 instances; a wildcard name, a
#    date range and a modality narrow as they should; no match is "0 series found", exit 0;
#  - `retrieve --series UID --output-dir got` writes exactly our 4 SOP instances, each with our PixelData
#    byte for byte and our geometry tags; a second retrieve into the same (now non-empty) folder, into a file,
#    and of an unknown series each fail with one line and leave what is there untouched;
#  - `compare --ref got --test series` (Larmor's reconstruction against the series from the PACS) pairs the 4
#    images by position and frame and gives 0 % error; the reconstruction as .cfl gives < 0.01 %; the same
#    series shifted by 2 mm fails with one line naming the mismatch;
#  - a calling AE title the PACS does not know, hostile peers (tests/e2e/py/slow_pacs.py: a trickled
#    response, a vanishing peer, a lying A-ASSOCIATE-AC), a PACS lying about the series (tests/e2e/py/
#    lying_pacs.py: fewer instances than announced, a failed C-GET, a SOP Instance UID that is a path,
#    silence after the C-GET), and Orthanc killed (vanished): one line on stderr, exit non-zero, within the
#    time limit, and no output folder or temporary left behind.
# Fails, never skips, when Orthanc is not installed or cannot start here (installer/install-deps.sh installs it).
set -euo pipefail
cli=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"

source "$here/lib/orthanc.sh"

"$cli" simulate --matrix 64 --coils 4 --slices 4 --output p1.h5 >/dev/null
"$cli" simulate --matrix 64 --coils 4 --slices 2 --output p2.h5 >/dev/null
"$cli" recon p1.h5 --method fft --device cpu --component magnitude --output series/ --patient-id P1 \
  --patient-name 'DOE^JANE' --accession ACC1 --send "$node" | tee recon.txt
grep -q "^sent 4/4 instances to $node\$" recon.txt || fail "recon --send did not send P1's 4 instances"
"$cli" recon p2.h5 --method fft --device cpu --component magnitude --output other/ --patient-id P2 \
  --patient-name 'ROE^RICHARD' --send "$node" >/dev/null
"$cli" recon p1.h5 --method fft --device cpu --output p1.cfl >/dev/null

# --- query ------------------------------------------------------------------------------------------------
"$cli" query --pacs "$node" --patient-id P1 --json q1.json | tee q1.txt
grep -q "^1 series found on $node\$" q1.txt || fail "query --patient-id P1 did not find exactly 1 series"
"$cli" query --pacs "$node" --patient-id P1 --level study --json qs.json >/dev/null
"$cli" query --pacs "$node" --patient-name 'DOE*' --json qn.json >/dev/null
"$cli" query --pacs "$node" --study-date "19000101-$(date -u +%Y)1231" --modality MR --json qd.json >/dev/null
"$cli" query --pacs "$node" --patient-id P1 --json q1.json >/dev/null  # its own earlier JSON: replaced
echo '{"mine": true}' >foreign.json
must_fail "foreign.json: exists and is not JSON written by Larmor" 5 "$cli" query --pacs "$node" --json foreign.json
grep -q mine foreign.json || fail "query --json replaced a user's JSON"
"$cli" query --pacs "$node" --patient-id NOBODY | tee q0.txt
grep -q "^0 series found" q0.txt || fail "a query without a match did not say 0 series found"
series_uid=$("$PY" - <<'PY'
import glob, json
import pydicom
from oracle import check

ours = [pydicom.dcmread(f) for f in sorted(glob.glob("series/*.dcm"))]
d = ours[0]
q = json.load(open("q1.json"))
check(q.get("software") == "Larmor" and q["level"] == "series", "the query JSON says what it is")
rows = q["rows"]
check(len(rows) == 1, "P1 has one series on the PACS")
r = rows[0]
check(r["series_uid"] == d.SeriesInstanceUID and r["study_uid"] == d.StudyInstanceUID,
      "the row's series and study UIDs are ours")
check(r["instances"] == 4 and r["modality"] == "MR", "4 MR instances announced")
check(r["patient_id"] == "P1" and r["patient_name"] == "DOE^JANE" and r["accession"] == "ACC1",
      "patient ID, name and accession as sent")
check(r["series_number"] == str(d.SeriesNumber) and r["series_description"] == d.SeriesDescription,
      "series number and description as sent")
s = json.load(open("qs.json"))["rows"]
check(len(s) == 1 and "series_uid" not in s[0] and s[0]["series"] == 1 and s[0]["instances"] == 4,
      "study level: P1's one study with 1 series and 4 instances")
n = json.load(open("qn.json"))["rows"]
check([x["patient_id"] for x in n] == ["P1"], "the wildcard name DOE* finds P1 only")
dd = json.load(open("qd.json"))["rows"]
check(sorted(x["patient_id"] for x in dd) == ["P1", "P2"], "the date range and modality MR find both patients")
print(d.SeriesInstanceUID)
PY
)
series_uid=$(tail -n 1 <<<"$series_uid")
echo "ok: query finds series $series_uid with the right tags"

# --- retrieve -------------------------------------------------------------------------------------------
"$cli" retrieve --pacs "$node" --series "$series_uid" --output-dir got | tee ret.txt
grep -q "^retrieved 4 instances of series $series_uid from $node into .*/got\$" ret.txt || fail "retrieve summary"
[[ -z $(ls -A got | grep -v '\.dcm$' || true) ]] || fail "retrieve left files other than .dcm in got/: $(ls -A got)"
"$PY" - <<'PY'
import glob
import numpy as np, pydicom
from oracle import check, fail

ours = {d.SOPInstanceUID: d for d in map(pydicom.dcmread, sorted(glob.glob("series/*.dcm")))}
got = {d.SOPInstanceUID: d for d in map(pydicom.dcmread, sorted(glob.glob("got/*.dcm")))}
check(set(got) == set(ours) and len(got) == 4, "got/ holds exactly our 4 SOP instances")
for uid, g in got.items():
    o = ours[uid]
    if g.PixelData != o.PixelData:
        fail(f"{uid}: the retrieved PixelData differs from what we sent")
    for key in ("ImagePositionPatient", "ImageOrientationPatient", "PixelSpacing", "SliceThickness", "Rows",
                "Columns", "InstanceNumber", "SeriesInstanceUID", "PatientID"):
        a, b = np.atleast_1d(np.array(g[key].value)), np.atleast_1d(np.array(o[key].value))
        if a.shape != b.shape or not np.array_equal(a, b):
            fail(f"{uid}: {key} retrieved {g[key].value} != sent {o[key].value}")
print("ok: the 4 retrieved instances have our pixel data byte for byte and our geometry tags")
PY
ls -l --time-style=full-iso got >got.before
must_fail "exists and is not empty" 5 "$cli" retrieve --pacs "$node" --series "$series_uid" --output-dir got
ls -l --time-style=full-iso got | cmp -s - got.before || fail "a refused retrieve changed got/"
echo "user data" >afile
must_fail "exists and is not a folder" 5 "$cli" retrieve --pacs "$node" --series "$series_uid" --output-dir afile
[[ $(cat afile) == "user data" ]] || fail "a refused retrieve changed a user's file"
must_fail "has no series 1.2.3.4" 10 "$cli" retrieve --pacs "$node" --series 1.2.3.4 --output-dir none
must_fail "is not a series UID" 5 "$cli" retrieve --pacs "$node" --series 'x/../y' --output-dir none
[[ ! -e none ]] || fail "a failed retrieve left none/ behind"
mkdir empty
"$cli" retrieve --pacs "$node" --series "$series_uid" --output-dir empty/ >/dev/null
[[ $(ls empty/*.dcm | wc -l) -eq 4 ]] || fail "a retrieve into an empty folder did not fill it"
[[ -z $(ls -A . | grep 'larmor' || true) ]] || fail "temporaries left behind: $(ls -A . | grep larmor)"

# --- compare: Larmor's reconstruction against the series from the PACS ---------------------------------------
"$cli" compare --ref got --test series --json cmp.json | tee cmp.txt
grep -q "^matched 4 images of 4 in the reference by position and frame\$" cmp.txt || fail "compare did not match by position"
"$cli" compare --ref got --test p1.cfl --json cmpcfl.json >/dev/null
"$PY" - <<'PY'
import json
from oracle import check
c = json.load(open("cmp.json"))
check(c["percent_error"] < 1e-6 and c["ssim"] > 0.99999, f"the same images: 0 % error (got {c['percent_error']})")
k = json.load(open("cmpcfl.json"))
check(k["percent_error"] < 0.01, f"the .cfl reconstruction against its DICOM: < 0.01 % error (got {k['percent_error']})")
PY
"$PY" - <<'PY'
import glob, os
import pydicom
os.makedirs("shifted")
for f in sorted(glob.glob("got/*.dcm")):
    d = pydicom.dcmread(f)
    p = [float(x) for x in d.ImagePositionPatient]
    d.ImagePositionPatient = [p[0], p[1], p[2] + 2.0]
    d.save_as("shifted/" + os.path.basename(f))
PY
must_fail "matches it by geometry and frame (nothing at its position" 10 "$cli" compare --ref got --test shifted
"$cli" simulate --matrix 32 --coils 4 --slices 4 --output small.h5 >/dev/null
"$cli" recon small.h5 --method fft --device cpu --output small/ >/dev/null
must_fail "not the same matrix" 10 "$cli" compare --ref got --test small

# --- a PACS that refuses, lies, goes silent or vanishes: one line, no hang, nothing written -----------------
must_fail "allow queries from the calling AE title \"OTHER\"" 10 "$cli" query --pacs "$node" --calling-aet OTHER
must_fail "allow queries from the calling AE title \"OTHER\"" 10 "$cli" retrieve --pacs "$node" --calling-aet OTHER \
  --series "$series_uid" --output-dir none
must_fail "rejected the association" 10 "$cli" query --pacs "WRONG@localhost:$ORTHANC_DICOM_PORT"
must_fail "give YYYYMMDD" 5 "$cli" query --pacs "$node" --study-date 2024-01-01
must_fail "give study or series" 5 "$cli" query --pacs "$node" --level image
start_peer slow_pacs.py response
must_fail "did not answer C-FIND within 2 s" 5 "$cli" query --pacs "ORTHANC@127.0.0.1:$port" --timeout 2
must_fail "did not answer C-FIND within 2 s" 5 "$cli" retrieve --pacs "ORTHANC@127.0.0.1:$port" --timeout 2 \
  --series "$series_uid" --output-dir none
start_peer slow_pacs.py vanish
must_fail "aborted the association on the C-FIND" 5 "$cli" query --pacs "ORTHANC@127.0.0.1:$port" --timeout 2
start_peer slow_pacs.py lie
must_fail "cannot connect for C-GET" 5 "$cli" retrieve --pacs "ORTHANC@127.0.0.1:$port" --timeout 2 \
  --series "$series_uid" --output-dir none
start_peer slow_pacs.py association
must_fail "did not answer C-FIND within 2 s" 5 "$cli" query --pacs "ORTHANC@127.0.0.1:$port" --timeout 2
# A PACS that lies about the series (tests/e2e/py/lying_pacs.py): it announces 3 instances and sends 1, fails
# the C-GET, sends an instance whose SOP Instance UID is a path, or goes silent after the C-GET request.
liar_retrieve() { must_fail "$1" 5 "$cli" retrieve --pacs "LIAR@127.0.0.1:$port" --timeout 2 --series 1.2.3.4 --output-dir none; }
start_peer lying_pacs.py fewer
liar_retrieve "sent 1 of the 3 instances it announced for series 1.2.3.4"
start_peer lying_pacs.py failure
liar_retrieve "failed the C-GET of series 1.2.3.4 (status 0xC000"
start_peer lying_pacs.py baduid
liar_retrieve 'sent an instance without a valid SOP Instance UID ("../../evil")'
[[ ! -e ../evil && ! -e ../evil.dcm ]] || fail "a lying SOP Instance UID wrote outside the folder"
start_peer lying_pacs.py silent
liar_retrieve "did not answer C-GET within 2 s (after 0 instances)"
[[ ! -e none ]] || fail "a failed retrieve left none/ behind"
[[ -z $(ls -A . | grep 'larmor' || true) ]] || fail "temporaries left behind: $(ls -A . | grep larmor)"
# Orthanc vanishes: killed, its port closed.
kill "$ORTHANC_PID"
for _ in $(seq 1 100); do kill -0 "$ORTHANC_PID" 2>/dev/null || break; sleep 0.1; done
must_fail "cannot connect for C-FIND" 10 "$cli" query --pacs "$node" --patient-id P1
must_fail "cannot connect for C-GET" 10 "$cli" retrieve --pacs "$node" --series "$series_uid" --output-dir none
[[ ! -e none ]] || fail "a failed retrieve left none/ behind"
echo "PASS: pacs_query"
