#!/usr/bin/env bash
# End-to-end: `larmor-cli serve` under faults (docs/streaming.md, "Safety"), each while other clients are served:
#  - a client whose HEADER claims a 4 GiB length gets a TEXT "error: ..." and a CLOSE; a client streaming at the
#    same time (its messages captured from `larmor-cli stream` by a fake server) gets both slices, bit for bit;
#  - a client that disconnects after slice 0's last acquisition: slice 0 is in --output-dir as recon makes it, the
#    unfinished slice is dropped and said so;
#  - a silent client is closed after --idle-timeout with an error;
#  - --output-dir never replaces a user's file (that scan fails with one line; the file is untouched);
#  - the server serves a normal scan afterwards.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir/out"
server_pid=""
trap '[[ -n $server_pid ]] && kill $server_pid 2>/dev/null || true' EXIT

"$cli" simulate --matrix 64 --coils 4 --slices 2 --output "$dir/cart.h5" >/dev/null
"$cli" recon "$dir/cart.h5" --device cpu --output "$dir/recon.cfl" >/dev/null

# A user's file where the first connection's slice 0 would go.
printf '# Dimensions\n1 1 \n' >"$dir/out/larmor-1-s0-r0-c0-p0-t0.hdr"
printf 'userdata' >"$dir/out/larmor-1-s0-r0-c0-p0-t0.cfl"

"$cli" serve --port 0 --device cpu --output-dir "$dir/out" --idle-timeout 5 >"$dir/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/serve.log")
[[ -n $port ]] || { cat "$dir/serve.log"; echo "FAIL: the server did not start"; exit 1; }

if "$cli" stream "$dir/cart.h5" --to "127.0.0.1:$port" >"$dir/user.txt" 2>&1; then
  echo "FAIL: a scan whose result would replace a user's file succeeded"; exit 1
fi
grep -q "exists" "$dir/user.txt" || { cat "$dir/user.txt"; echo "FAIL: no reason given"; exit 1; }
[[ $(cat "$dir/out/larmor-1-s0-r0-c0-p0-t0.cfl") == userdata ]] || { echo "FAIL: the user's file changed"; exit 1; }

# The client's messages, as a scanner would send them.
"$PY" -c "import mrd_wire, sys; mrd_wire.capture(sys.argv[1], sys.argv[2])" "$dir/capture.port" "$dir/capture.bin" &
cap=$!
for _ in $(seq 100); do [[ -s $dir/capture.port ]] && break; sleep 0.1; done
"$cli" stream "$dir/cart.h5" --to "127.0.0.1:$(cat "$dir/capture.port")" >/dev/null
wait $cap

"$PY" - "$port" "$dir" <<'PY'
import socket, struct, sys, time
import mrd_wire as w
port, d = int(sys.argv[1]), sys.argv[2]
frames = w.load_frames(f"{d}/capture.bin")
recon = open(f"{d}/recon.cfl", "rb").read()
half = len(recon) // 2

def connect():
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(30)
    return s

# An honest client half-way through its scan while a liar connects.
honest = connect()
for f in frames[:len(frames) // 2]:
    honest.sendall(f)
liar = connect()
liar.sendall(w.frame(1, "default.xml") + struct.pack("<HI", 3, 0xFFFFFFF0) + b"<ismrmrdHeader")
got = w.replies(liar)
assert got and got[0][0] == 5 and got[0][1].startswith("error:") and "exceeds the limit" in got[0][1], got
assert got[-1][0] == 4, "the liar gets CLOSE after the error"
print("liar:", got[0][1])
for f in frames[len(frames) // 2:]:
    honest.sendall(f)
images = [p for m, p in w.replies(honest) if m == 1022]
assert len(images) == 2, f"the honest client got {len(images)} images"
for head_pixels in images:
    s = w.image_slice(head_pixels)
    assert head_pixels[1] == recon[s * half:(s + 1) * half], f"slice {s} is not recon's"
print("honest client: 2 images, recon's bit for bit")

# A client that vanishes after slice 0's last acquisition and a few of slice 1.
cut = next(i for i, f in enumerate(frames) if w.last_in_slice(f)) + 1
quitter = connect()
for f in frames[:cut + 5]:
    quitter.sendall(f)
time.sleep(0.5)
quitter.close()

# A silent client: closed by the idle timeout with an error.
silent = connect()
t = time.time()
got = w.replies(silent)
assert got and got[0][0] == 5 and "idle timeout" in got[0][1], got
print(f"silent client: '{got[0][1]}' after {time.time() - t:.1f} s")
PY

sleep 0.5
quitter=$(sed -n 's/^connection \([0-9]*\) .*acquisitions of unfinished slices dropped.*/\1/p' "$dir/serve.log")
[[ -n $quitter ]] || { cat "$dir/serve.log"; echo "FAIL: the server did not report the dropped slice"; exit 1; }
cmp "$dir/out/larmor-$quitter-s0-r0-c0-p0-t0.cfl" <(head -c $(( $(stat -c %s "$dir/recon.cfl") / 2 )) "$dir/recon.cfl") ||
  { echo "FAIL: the vanished client's slice 0 is not in --output-dir as recon makes it"; exit 1; }
[[ ! -e $dir/out/larmor-$quitter-s1-r0-c0-p0-t0.cfl ]] || { echo "FAIL: an unfinished slice was reconstructed"; exit 1; }

"$cli" stream "$dir/cart.h5" --to "127.0.0.1:$port" --output "$dir/after.cfl" >/dev/null
cmp "$dir/after.cfl" "$dir/recon.cfl"
kill -0 $server_pid || { echo "FAIL: the server died"; exit 1; }
echo "PASS: a lying length, a vanished client, a silent client and a user's file cost only their own scans"
