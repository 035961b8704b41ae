#!/usr/bin/env bash
# Mutated inputs: small valid files made here (larmor-cli simulate: ISMRMRD .h5 and BART .cfl/.hdr; larmor-cli
# recon: a NIfTI .nii, its gzip .nii.gz and a DICOM series of three slices), then 150 mutants of them for a fixed
# seed (python3's random.seed): bytes flipped, the file truncated, a header field overwritten with an extreme value
# (0, -1, 2^31 - 1, 2^15 - 1, NaN, ...) at a random offset. Each raw-data mutant goes through `larmor-cli info`,
# each reference-image mutant through `larmor-cli compare --ref MUTANT --test GOOD` (a DICOM mutant is one file
# of a copy of the series, read as the folder). Every run is under `timeout 20` and `ulimit -v` (about 4 GB) and
# must end in exit 0, or exit 1 with exactly one line on stderr; a signal, a timeout or any other exit status is a
# failure. A failing mutant is kept in DIR/failed/ (with its command, exit status and stderr) to reproduce it.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
py=/usr/bin/python3
[[ -x $py ]] || { echo "FAIL: /usr/bin/python3 is missing" >&2; exit 1; }
command -v timeout >/dev/null || { echo "FAIL: timeout (coreutils) is missing" >&2; exit 1; }
command -v gzip >/dev/null || { echo "FAIL: gzip is missing" >&2; exit 1; }
vlimit=4000000  # KiB

# --- valid seeds ----------------------------------------------------------------------------------------------
q() { ( ulimit -v $vlimit; exec timeout 60 "$@" ) >/dev/null; }
mkdir seeds
q "$cli" simulate --matrix 32 --coils 2 --output seeds/c.h5
q "$cli" simulate --matrix 16 --coils 2 --output seeds/k.cfl
q "$cli" simulate --matrix 32 --coils 2 --slices 3 --output seeds/s.h5
q "$cli" recon seeds/s.h5 --method fft --device cpu --output seeds/good.cfl
q "$cli" recon seeds/s.h5 --method fft --device cpu --output seeds/ref.nii
q "$cli" recon seeds/s.h5 --method fft --device cpu --output seeds/dcm/
gzip -c seeds/ref.nii >seeds/ref.nii.gz
ndcm=$(find seeds/dcm -name '*.dcm' | wc -l)
[[ $ndcm -eq 3 ]] || { echo "FAIL: the DICOM seed has $ndcm files, expected 3" >&2; exit 1; }
# The seeds themselves must pass, or every mutant's exit 1 would mean nothing.
q "$cli" info seeds/c.h5
q "$cli" info seeds/k.cfl
for ref in seeds/ref.nii seeds/ref.nii.gz seeds/dcm; do q "$cli" compare --ref "$ref" --test seeds/good.cfl; done

# --- mutants: manifest lines "KIND PATH" (KIND info: larmor-cli info PATH; ref: compare --ref PATH) ------------
mkdir mutants
"$py" - <<'PY'
import os, random, shutil, struct

random.seed(20261207)
EXTREMES = [b"\x00", b"\xff", b"\x7f", b"\x80",
            struct.pack("<h", -1), struct.pack("<h", 0), struct.pack("<h", 32767), struct.pack("<h", -32768),
            struct.pack("<i", 0), struct.pack("<i", -1), struct.pack("<i", 2**31 - 1), struct.pack("<i", -2**31),
            struct.pack(">i", 2**31 - 1), struct.pack("<I", 0xFFFFFFF0),
            struct.pack("<q", -1), struct.pack("<q", 2**62), struct.pack("<Q", 2**64 - 1),
            struct.pack("<f", float("nan")), struct.pack("<f", float("inf")), struct.pack("<f", 1e30),
            struct.pack("<f", -1.0), struct.pack("<d", float("nan"))]
manifest = []

def flip(b, region):
    b = bytearray(b)
    for _ in range(random.randint(1, 8)):
        b[random.randrange(region)] ^= random.randint(1, 255)
    return bytes(b)

def truncate(b, region):
    return b[:random.randrange(min(len(b), region))]

def overwrite(b, region):
    v = random.choice(EXTREMES)
    at = random.randrange(max(1, min(len(b), region) - len(v)))
    return b[:at] + v + b[at + len(v):]

MUTATORS = [flip, truncate, overwrite]

def mutants(b, n, region):
    """n mutants of b, the mutators in turn; offsets in the first `region` bytes (the headers)."""
    return [MUTATORS[i % 3](b, min(region, len(b))) for i in range(n)]

def put(path, data):
    with open(path, "wb") as f:
        f.write(data)

def read(path):
    with open(path, "rb") as f:
        return f.read()

# ISMRMRD (HDF5): structures are spread over the file, so offsets anywhere.
h5 = read("seeds/c.h5")
for i, m in enumerate(mutants(h5, 40, len(h5))):
    put(f"mutants/h5_{i:03}.h5", m); manifest.append(("info", f"mutants/h5_{i:03}.h5"))
# BART: the text header (a number replaced or the text mutated) and the samples (truncated or flipped).
hdr, cfl = read("seeds/k.hdr"), read("seeds/k.cfl")
numbers = [b"0", b"-1", b"99999999999", b"2147483648", b"65536", b"1e9", b"x", b""]
for i in range(30):
    base = f"mutants/cfl_{i:03}"
    h, c = hdr, cfl
    if i % 3 == 0:
        lines = hdr.split(b"\n")
        dims = lines[1].split(b" ")
        dims[random.randrange(len(dims))] = random.choice(numbers)
        lines[1] = b" ".join(dims)
        h = b"\n".join(lines)
    elif i % 3 == 1:
        h = MUTATORS[random.randrange(3)](hdr, len(hdr))
    else:
        c = random.choice([truncate, flip])(cfl, len(cfl))
    put(base + ".hdr", h); put(base + ".cfl", c)
    manifest.append(("info", base + ".cfl"))
# NIfTI: the 348-byte header and the first voxels (plain), the gzip stream (compressed).
nii, niigz = read("seeds/ref.nii"), read("seeds/ref.nii.gz")
for i, m in enumerate(mutants(nii, 35, 400)):
    put(f"mutants/nii_{i:03}.nii", m); manifest.append(("ref", f"mutants/nii_{i:03}.nii"))
for i, m in enumerate(mutants(niigz, 10, len(niigz))):
    put(f"mutants/niigz_{i:03}.nii.gz", m); manifest.append(("ref", f"mutants/niigz_{i:03}.nii.gz"))
# DICOM: one file of a copy of the series, its header (preamble, meta group, dataset elements) mostly.
files = sorted(f for f in os.listdir("seeds/dcm") if f.endswith(".dcm"))
for i in range(35):
    d = f"mutants/dcm_{i:03}"
    shutil.copytree("seeds/dcm", d)
    victim = os.path.join(d, files[i % len(files)])
    b = read(victim)
    put(victim, MUTATORS[i % 3](b, len(b) if i % 5 == 4 else min(len(b), 1500)))
    manifest.append(("ref", d))
with open("manifest", "w") as f:
    f.writelines(f"{k} {p}\n" for k, p in manifest)
PY

# --- run ------------------------------------------------------------------------------------------------------
total=0 ok0=0 ok1=0 fails=0
mkdir failed
while read -r kind path; do
  total=$((total + 1))
  if [[ $kind == info ]]; then cmd=("$cli" info "$path"); else cmd=("$cli" compare --ref "$path" --test seeds/good.cfl); fi
  rc=0
  ( ulimit -v $vlimit; exec timeout 20 "${cmd[@]}" ) >out.txt 2>err.txt || rc=$?
  lines=$(grep -c '' err.txt || true)
  if [[ $rc -eq 0 ]]; then
    ok0=$((ok0 + 1))
  elif [[ $rc -eq 1 && $lines -eq 1 ]]; then
    ok1=$((ok1 + 1))
  else
    fails=$((fails + 1))
    why="exit $rc"
    [[ $rc -eq 124 ]] && why="timed out (20 s)"
    [[ $rc -gt 128 && $rc -ne 124 ]] && why="killed by signal $((rc - 128))"
    [[ $rc -eq 1 ]] && why="exit 1 with $lines stderr lines"
    cp -r "$path" failed/
    [[ $path == *.cfl ]] && cp "${path%.cfl}.hdr" failed/
    { echo "${cmd[*]}"; echo "$why"; cat err.txt; } >"failed/$(basename "$path").txt"
    echo "FAIL $path: $why: ${cmd[*]}" >&2
    sed 's/^/  | /' err.txt | head -5 >&2
  fi
done <manifest
rm -rf mutants out.txt err.txt
echo "mutated inputs: $total mutants, $ok0 read (exit 0), $ok1 refused (exit 1, one line), $fails failed"
[[ $total -ge 150 ]] || { echo "FAIL: only $total mutants" >&2; exit 1; }
if [[ $fails -ne 0 ]]; then
  echo "FAIL: $fails mutants; kept in $dir/failed/" >&2
  exit 1
fi
rm -rf failed
echo "PASS"
