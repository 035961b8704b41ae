#!/usr/bin/env bash
# Installs a Larmor .deb on a fresh Debian 12 the way a user would (`apt install ./larmor_*.deb`), in a minimal
# chroot made by debootstrap, and runs it there: `import larmor`, the CLI, and the workstation under Xvfb.
# Needs root, debootstrap and the network (Debian's mirror); not part of `make test` (docs/packaging.md).
#
#   sudo tools/fresh_debian_install.sh build/default/larmor_0.1.0_amd64.deb [ROOT]   (ROOT: /tmp/larmor-fresh)
set -euo pipefail
deb=$(realpath "${1:?usage: tools/fresh_debian_install.sh LARMOR.deb [ROOT]}")
root=${2:-/tmp/larmor-fresh}
command -v debootstrap >/dev/null || { echo "fresh_debian_install: needs debootstrap (apt install debootstrap)" >&2; exit 2; }
[[ ! -e $root ]] || { echo "fresh_debian_install: $root exists; give a new folder" >&2; exit 2; }
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.debootstrap.log" 2>&1 ||
  { tail -5 "$root.debootstrap.log"; exit 1; }
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/root/"
mount -t proc proc "$root/proc"
trap 'umount "$root/proc"' EXIT
chroot "$root" bash -euc "
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q /root/$(basename "$deb") xvfb xauth >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }
  grep -E 'newly installed' /tmp/apt.log
  cd /tmp
  python3 -c 'import larmor; print(\"import larmor:\", larmor.__file__, [d[\"id\"] for d in larmor.devices()])'
  larmor-cli simulate --matrix 64 --coils 4 --output s.h5 >/dev/null
  larmor-cli recon s.h5 --method cg --output o.png | tail -1
  python3 -c 'import larmor; r = larmor.recon(larmor.read(\"s.h5\"), method=\"cs\", iters=10); print(\"larmor.recon:\", r.image.shape)'
  xvfb-run -a -s '-screen 0 1280x800x24' larmor --method cs --run --screenshot w.png --quit 2>&1 | grep -v XDG_RUNTIME
  test \$(stat -c %s w.png) -gt 20000 && echo 'workstation screenshot:' $root/tmp/w.png
"
