# Sourced by the e2e scripts that run Larmor on every device present (bart_gridding.sh, bart_pics.sh), after
# they set `cli` (larmor-cli) and `name` (for their messages); in lib/ because every tests/e2e/*.sh is a test.
#   devices: "cpu", and "cpu cuda" where `larmor-cli devices` lists a GPU (said on stdout when it does not).
#   recon_on DEV OUT ARGS...: larmor-cli recon ARGS --device DEV --output OUT.cfl, its output in OUT.log; exits 1
#     unless the reconstruction ran on DEV.
devices=cpu
if "$cli" devices | grep -q "^no GPU"; then echo "no CUDA device: the CPU only"; else devices="cpu cuda"; fi
recon_on() {
  local dev=$1 out=$2; shift 2
  "$cli" recon "$@" --device "$dev" --output "$out.cfl" > "$out.log"
  grep -q " on $dev" "$out.log" || { cat "$out.log"; echo "$name: $out did not run on $dev" >&2; exit 1; }
}
