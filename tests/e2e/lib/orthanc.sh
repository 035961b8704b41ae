# Sourced by the e2e scripts that talk to a real PACS (pacs_orthanc.sh, pacs_query.sh, serve_pacs.sh), in their
# scratch folder, after they set `here` (tests/e2e) and `cli`; in lib/ because every tests/e2e/*.sh is a test.
# Starts Debian's Orthanc (tests/e2e/orthanc/start-orthanc.sh). Orthanc is installed by
# installer/install-deps.sh: not starting (the script's exit 77: not installed, or not up within 30 s) fails the
# test, with the script's reason. On exit it stops Orthanc and every process whose pid the script added to `pids`.
#   node (ORTHANC@localhost:PORT), rest (its REST API), ORTHANC_* (tests/e2e/orthanc/orthanc.env)
#   fail MESSAGE: the test fails
#   must_fail PATTERN SECONDS COMMAND...: COMMAND exits non-zero (not a hang), with exactly one line on stderr
#     matching PATTERN, within SECONDS
#   start_peer SCRIPT MODE: a fresh hostile peer (tests/e2e/py/SCRIPT MODE, the one before it stopped); sets port
pids=()
orthanc_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [[ -n ${ORTHANC_PID:-} ]] && kill "$ORTHANC_PID" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$ORTHANC_PID" 2>/dev/null || break; sleep 0.1; done  # it stops in ~3 s
  fi
}
trap orthanc_cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

set +e
"$here/orthanc/start-orthanc.sh" "$PWD/orthanc" >start.txt
rc=$?
set -e
if [[ $rc -ne 0 ]]; then cat start.txt; fail "Orthanc did not start (exit $rc)"; fi
source "$PWD/orthanc/orthanc.env"
node="ORTHANC@localhost:$ORTHANC_DICOM_PORT"
rest="http://localhost:$ORTHANC_HTTP_PORT"

must_fail() {
  local pattern=$1 limit=$2; shift 2
  local t0=$SECONDS rc=0
  timeout 60 "$@" >out.txt 2>err.txt || rc=$?
  local took=$((SECONDS - t0))
  [[ $rc -ne 0 && $rc -ne 124 ]] || fail "'$*' exited $rc (wanted a failure, not a hang)"
  [[ $(wc -l <err.txt) -eq 1 ]] || fail "'$*' printed $(wc -l <err.txt) lines on stderr: $(cat err.txt)"
  grep -q -- "$pattern" err.txt || fail "'$*': '$(cat err.txt)' does not say '$pattern'"
  [[ $took -le $limit ]] || fail "'$*' took ${took} s (limit ${limit} s)"
  echo "ok: $* -> exit $rc in ${took} s: $(cat err.txt)"
}

peer_pid=""
start_peer() {
  [[ -n $peer_pid ]] && kill "$peer_pid" 2>/dev/null || true
  rm -f "port-$2"
  /usr/bin/python3 "$here/py/$1" "$2" "port-$2" &
  peer_pid=$!
  pids+=("$peer_pid")
  for _ in $(seq 1 50); do [[ -s port-$2 ]] && break; sleep 0.1; done
  port=$(cat "port-$2")
}
