#!/usr/bin/env bash
# The PACS timeout is a deadline over the whole exchange, not over each read. Against hostile peers on
# 127.0.0.1 (tests/e2e/py/slow_pacs.py, plain python3):
#  - one that sends an A-ASSOCIATE-AC header and then one byte a second (every read gets data within any
#    per-read timeout);
#  - one that accepts the association and then trickles the C-ECHO / C-STORE response the same way;
#  - one that vanishes after the association, and one whose A-ASSOCIATE-AC claims 2 GiB and then stalls;
# `larmor-cli echo` and `larmor-cli send` with --timeout 3 end within 5 s, exit non-zero, and print one line
# on stderr that names the peer. Before the deadline, the trickles kept both running for as long as the peer
# liked (over 120 s).
set -euo pipefail
cli=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

server_pid=""
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT

"$cli" simulate --matrix 32 --coils 2 --slices 2 --output s.h5 >/dev/null
"$cli" recon s.h5 --method fft --device cpu --output series/ >/dev/null
[[ $(ls series/*.dcm | wc -l) -eq 2 ]] || fail "the test series was not written"

# start_peer MODE: a fresh hostile peer; sets $port.
start_peer() {
  cleanup
  rm -f "port-$1"
  /usr/bin/python3 "$here/py/slow_pacs.py" "$1" "port-$1" &
  server_pid=$!
  for _ in $(seq 1 50); do [[ -s port-$1 ]] && break; sleep 0.1; done
  [[ -s port-$1 ]] || fail "slow_pacs.py $1 did not start"
  port=$(cat "port-$1")
}

# must_end PATTERN LIMIT_S CMD...: non-zero exit, exactly one line on stderr that names the peer and
# matches PATTERN, within LIMIT_S seconds.
must_end() {
  local pattern=$1 limit=$2; shift 2
  local rc=0 t0 t1 ms
  t0=$(date +%s%N)
  timeout 150 "$@" >out.txt 2>err.txt || rc=$?
  t1=$(date +%s%N)
  ms=$(((t1 - t0) / 1000000))
  [[ $rc -ne 0 && $rc -ne 124 ]] || fail "'$*' exited $rc after $ms ms (wanted a failure, not a hang)"
  [[ $(wc -l <err.txt) -eq 1 ]] || fail "'$*' printed $(wc -l <err.txt) lines on stderr: $(cat err.txt)"
  grep -q "ORTHANC@127.0.0.1:$port" err.txt || fail "'$*': '$(cat err.txt)' does not name the peer"
  grep -q -- "$pattern" err.txt || fail "'$*': '$(cat err.txt)' does not say '$pattern'"
  [[ $ms -le $((limit * 1000)) ]] || fail "'$*' took $ms ms (limit $limit s): $(cat err.txt)"
  echo "ok: $* -> exit $rc in $ms ms: $(cat err.txt)"
}

# against MODE ECHO_PATTERN SEND_PATTERN: echo, then send, to a fresh peer of MODE must_end within 5 s with
# --timeout 3; PEER in a pattern stands for the peer's address.
against() {
  start_peer "$1"
  local peer="ORTHANC@127.0.0.1:$port"
  must_end "${2//PEER/$peer}" 5 "$cli" echo "$peer" --timeout 3
  must_end "${3//PEER/$peer}" 5 "$cli" send series --to "$peer" --timeout 3
}

against association "did not answer C-ECHO within 3 s" "did not answer C-STORE within 3 s"
# The first file's C-STORE runs into the deadline; the association is then gone, so the rest are not sent.
against response "did not answer C-ECHO within 3 s" "2 of 2 instances were not stored"
grep -q "no C-STORE response within 3 s" out.txt || fail "send's file line does not say the response timed out: $(cat out.txt)"
against vanish "PACS PEER" "2 of 2 instances were not stored"
against lie "PACS PEER" "PACS PEER"
echo "PASS: pacs_slow_peer"
