#!/usr/bin/env bash
# End-to-end interop: `larmor-cli serve` answers a client it did not derive from its own code. Gadgetron's
# gadgetron_ismrmrd_client is not packaged here, so tests/e2e/py/gadgetron_client.py frames the messages as that
# client does (written from the MRD message table, libismrmrd's structs and Gadgetron's client: CONFIG_FILE's
# 1024-byte name, the XML header as message 3, with and without the NUL older Gadgetron clients count in its length,
# the acquisitions, CLOSE; images read until CLOSE), with a phantom and header XML of its own: the image that comes
# back must be numpy's root sum of squares of the phantom's coil images (docs/streaming.md).
set -euo pipefail
cli=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$dir"; mkdir -p "$dir"
server_pid=""
trap '[[ -n $server_pid ]] && kill $server_pid 2>/dev/null || true' EXIT
"$cli" serve --port 0 --device cpu --idle-timeout 30 >"$dir/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/serve.log")
[[ -n $port ]] || { cat "$dir/serve.log"; echo "FAIL: the server did not start"; exit 1; }
for args in "default.xml" "default.xml --nul" "fft.xml --nul"; do
  # shellcheck disable=SC2086
  /usr/bin/python3 "$here/py/gadgetron_client.py" 127.0.0.1 "$port" $args || { cat "$dir/serve.log"; exit 1; }
done
echo "PASS: a Gadgetron-framed client with its own phantom gets the phantom back"
