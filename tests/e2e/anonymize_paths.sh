#!/usr/bin/env bash
# `--anonymize` drops every path from what is written. The raw file, the coil maps (--coil-maps FILE, a
# relative path) and the reference (--ref, an absolute path) lie in a folder named like a patient,
# DOE_JOHN_1234/, and --q-cache names a folder there too; the series description the user typed names a file.
# Proves, reading every byte and every element of every file (pydicom, not Larmor):
#  - DICOM with --anonymize (magnitude and phase series): no file holds the folder's name, the file names or
#    the test folder's path anywhere (raw bytes, meta header and private tag (0019,1000) included), and no
#    text element, at any depth, holds a '/' or a file name (NAME.ext); the provenance is still there, with
#    the settings' paths "removed (anonymized)";
#  - DICOM without --anonymize keeps today's provenance: the --ref path as given, the raw file's base name;
#  - NIfTI, PNG, BART (--anonymize has nothing to remove there): the NIfTI header and extensions, every PNG
#    chunk but the pixels and the .hdr hold no path;
#  - the --json sidecar with --anonymize (DICOM and NIfTI runs): its bytes hold no secret, no '/' and not the
#    host name, and it still carries the settings; without --anonymize it keeps the paths and the host.
set -euo pipefail
cli=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
rm -rf "$dir"; mkdir -p "$dir/DOE_JOHN_1234"; cd "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { "$@" >/dev/null; }

p=DOE_JOHN_1234
q "$cli" simulate --matrix 32 --coils 4 --slices 2 --output "$p/scan_DOE.h5"
q "$cli" maps "$p/scan_DOE.h5" --output "$p/cm.cfl"
q "$cli" recon "$p/scan_DOE.h5" --method fft --device cpu --output "$p/ref.cfl"
args=("$p/scan_DOE.h5" --method cg --device cpu --iters 5 --reg anatomical --ref "$dir/$p/ref.cfl"
      --coil-maps "$p/cm.cfl" --q-cache "$p/qcache")
q "$cli" recon "${args[@]}" --anonymize --component magnitude --component phase \
  --series-description "DOE_JOHN_1234/notes.txt cg" --output anon/ --json anon-dicom.json
q "$cli" recon "${args[@]}" --output plain/ --json plain.json
q "$cli" recon "${args[@]}" --anonymize --output anon.nii --json anon-nii.json
q "$cli" recon "${args[@]}" --anonymize --output anon.png
q "$cli" recon "${args[@]}" --anonymize --output anon.cfl

"$PY" - "$dir" <<'PY'
import glob, json, re, socket, struct, sys
import pydicom
from oracle import check, fail

root = sys.argv[1]
secrets = ["DOE_JOHN_1234", "scan_DOE", "cm.cfl", "ref.cfl", "qcache", "notes.txt", root]
binary = {"OB", "OW", "OF", "OD", "OL", "OV", "UN"}
filename = re.compile(r"[^\s/\\]+\.[A-Za-z][A-Za-z0-9_]{0,7}\b")

def text_elements(ds):
    for e in ds.iterall():
        if e.VR in binary or e.VR == "SQ":
            continue
        vals = e.value if isinstance(e.value, (list, pydicom.multival.MultiValue)) else [e.value]
        for v in vals:
            yield e, v.decode("latin-1") if isinstance(v, bytes) else str(v)

files = sorted(glob.glob("anon/*.dcm"))
check(len(files) == 4, f"--anonymize wrote 4 instances (2 slices x magnitude, phase): {len(files)}")
for f in files:
    raw = open(f, "rb").read()
    for s in secrets:
        if s.encode() in raw:
            fail(f"{f}: the bytes hold '{s}'")
    ds = pydicom.dcmread(f)
    n = 0
    for el in [ds.file_meta, ds]:
        for e, v in text_elements(el):
            n += 1
            if "/" in v or "\\" in v:
                fail(f"{f}: {e.tag} {e.name} holds a path separator: {v[:200]}")
            m = filename.search(v)
            if m:
                fail(f"{f}: {e.tag} {e.name} holds a file name '{m.group(0)}': {v[:200]}")
    check(n > 40, f"{f}: {n} text values read (the check is not vacuous)")
    prov = json.loads(ds[0x0019, 0x1000].value)
    it = prov["settings"]["iterative"]
    for key in ("reference", "coil_maps", "cache_directory"):
        if it[key] != "removed (anonymized)":
            fail(f"{f}: settings.iterative.{key} = {it[key]!r}")
    if prov["input"] != "removed (anonymized)" or "host" in prov and prov["host"] != "removed (anonymized)":
        fail(f"{f}: input/host kept: {prov.get('input')!r} {prov.get('host')!r}")
    check(prov["settings"]["method"] == "cg" and prov["settings"]["iterative"]["iterations"] == 5,
          f"{f}: the anonymized provenance still carries the settings")
    check(str(ds.SeriesDescription).startswith("<path removed> cg"), f"{f}: SeriesDescription {ds.SeriesDescription!r}")

plain = pydicom.dcmread(sorted(glob.glob("plain/*.dcm"))[0])
prov = json.loads(plain[0x0019, 0x1000].value)
check(prov["settings"]["iterative"]["reference"] == f"{root}/DOE_JOHN_1234/ref.cfl",
      "without --anonymize the provenance keeps the --ref path as given")
check(prov["input"] == "scan_DOE.h5", "without --anonymize the raw file's base name is kept (not its folder)")

raw = open("anon.nii", "rb").read()
head = raw[:int(struct.unpack("<f", raw[108:112])[0])]  # header and extensions, up to vox_offset
for s in secrets + ["/"]:
    if s.encode() in head:
        fail(f"anon.nii: the header holds '{s}'")
check(b"Larmor" in head, "anon.nii: descrip says Larmor (the header was read)")
# PNG: every chunk but the pixels (IDAT); BART: the whole .hdr.
png, pos, texts = open("anon.png", "rb").read(), 8, b""
while pos < len(png):
    n, kind = struct.unpack(">I4s", png[pos:pos + 8])
    if kind != b"IDAT":
        texts += png[pos + 8:pos + 8 + n]
    pos += 12 + n
hdr = open("anon.hdr", "rb").read()
for name, blob in (("anon.png", texts), ("anon.hdr", hdr)):
    for s in secrets + ["/"]:
        if s.encode() in blob:
            fail(f"{name}: holds '{s}' outside the pixels")
check(b"Larmor" in texts and b"Larmor" in hdr, "anon.png and anon.hdr name Larmor (their metadata was read)")

# The --json sidecar: every byte with --anonymize; the user's full record without it.
host = socket.gethostname()
for name in ("anon-dicom.json", "anon-nii.json"):
    raw = open(name, "rb").read()
    for s in secrets + ["/", f'"{host}"'] + ([host] if len(host) >= 4 else []):  # a short name only as a value
        if s.encode() in raw:
            fail(f"{name}: holds '{s}'")
    j = json.loads(raw)
    check(j.get("software") == "Larmor" and j["settings"]["method"] == "cg" and
          j["settings"]["iterative"]["iterations"] == 5, f"{name}: still the run's record (software, settings)")
    for key in ("input", "output", "host"):
        check(j.get(key, "removed (anonymized)") == "removed (anonymized)", f"{name}: {key} = {j.get(key)!r}")
    check(j["settings"]["iterative"]["reference"] == "removed (anonymized)", f"{name}: the --ref path removed")
    check("created_utc" not in raw.decode(), f"{name}: no date of creation")
plain = json.loads(open("plain.json").read())
check(plain["settings"]["iterative"]["reference"] == f"{root}/DOE_JOHN_1234/ref.cfl" and plain.get("host") == host,
      "without --anonymize the --json sidecar keeps the --ref path and the host name")
print("PASS: anonymize_paths")
PY
