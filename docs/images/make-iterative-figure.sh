#!/usr/bin/env bash
# Rebuilds docs/images/iterative-vs-bart.png: the real brain (../shared/data/brain-poisson-8ch, Poisson-disc
# ~13 %) and BART's radial phantom (256^2, 101 golden-angle spokes, 8 coils), each row: zero-filled/gridding,
# Larmor SENSE (cg), Larmor CS-TV, Larmor CS-wavelet (defaults), BART pics -l2, BART pics -R T (and the truth
# for the phantom). Usage: docs/images/make-iterative-figure.sh LARMOR-CLI WORKDIR
set -euo pipefail
cli=$(realpath "$1") dir=$2 out=$(realpath "$(dirname "$0")")/iterative-vs-bart.png
brain=$(realpath "$(dirname "$0")/../../../shared/data/brain-poisson-8ch/ksp")
mkdir -p "$dir"; cd "$dir"
q() { "$@" >/dev/null 2>&1; }
# Brain
"$cli" recon "$brain.cfl" --method fft --device cpu --output b_fft.cfl >/dev/null
"$cli" recon "$brain.cfl" --method cg --device cpu --output b_cg.cfl >/dev/null
"$cli" recon "$brain.cfl" --method cs --device cpu --output b_tv.cfl >/dev/null
"$cli" recon "$brain.cfl" --method cs --reg wavelet --device cpu --output b_w.cfl >/dev/null
q bart ecalib -m1 "$brain" b_maps
q bart pics -S -l2 -r 0.01 -i 30 "$brain" b_maps b_bl2
q bart pics -S -R T:6:0:0.003 -i 100 "$brain" b_maps b_bt
# Radial phantom
q bart traj -x 512 -y 101 -r -G t2; q bart scale 0.5 t2 traj
q bart phantom -k -s 8 -t traj ksp; q bart phantom -k -s 8 -x 256 kc; q bart fft -i 3 kc c; q bart rss 8 c truth
"$cli" recon ksp.cfl --traj traj.cfl --matrix 256 --method gridding --device cpu --output r_grid.cfl >/dev/null
"$cli" recon ksp.cfl --traj traj.cfl --matrix 256 --method cg --device cpu --output r_cg.cfl >/dev/null
"$cli" recon ksp.cfl --traj traj.cfl --matrix 256 --method cs --device cpu --output r_tv.cfl >/dev/null
"$cli" recon ksp.cfl --traj traj.cfl --matrix 256 --method cs --reg wavelet --device cpu --output r_w.cfl >/dev/null
q bart nufft -i -d 256:256:1 traj ksp g; q bart fft -u 3 g kg; q bart ecalib -m1 kg r_maps
q bart pics -S -l2 -r 0.001 -i 30 -t traj ksp r_maps r_bl2
q bart pics -S -R T:3:0:0.001 -i 100 -t traj ksp r_maps r_bt
/usr/bin/python3 - "$out" <<'PY'
import sys, zlib, struct, numpy as np
def cfl(name):
    dims = [int(x) for x in open(name + ".hdr").read().split("\n")[1].split()]
    a = np.fromfile(name + ".cfl", dtype=np.complex64).reshape(dims, order="F")
    return np.abs(np.squeeze(a))
def norm(a):
    return np.clip(a / np.percentile(a, 99.5), 0, 1)
rows = [["b_fft", "b_cg", "b_tv", "b_w", "b_bl2", "b_bt"], ["r_grid", "r_cg", "r_tv", "r_w", "r_bl2", "r_bt", "truth"]]
imgs = [[norm(cfl(n)).T for n in r] for r in rows]  # x across, y down
h = max(i.shape[0] for r in imgs for i in r); pad = 4
width = max(sum(i.shape[1] + pad for i in r) for r in imgs)
canvas = np.zeros((len(imgs) * (h + pad), width))
for k, r in enumerate(imgs):
    x = 0
    for i in r:
        canvas[k * (h + pad):k * (h + pad) + i.shape[0], x:x + i.shape[1]] = i; x += i.shape[1] + pad
px = (canvas * 255).astype(np.uint8)
raw = b"".join(b"\0" + bytes(row) for row in px)
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", px.shape[1], px.shape[0], 8, 0, 0, 0, 0)) + \
      chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
PY
echo "wrote $out"
