#!/usr/bin/env bash
# `larmor-cli batch --slurm` against a real Slurm (Debian's slurm-wlm 22.05 and munge), not a mock. The script
# starts a one-node cluster on localhost in a temporary folder -- munged with its own key and socket,
# slurmctld and slurmd with a generated slurm.conf (own ports, state and spool folders, proctrack/linuxproc,
# task/none, select/cons_tres) -- and stops every daemon it started on exit. Then:
#  - `batch --slurm --shards 3 --max-parallel 2` over 6 simulated 32^2 radial datasets, one of them corrupt,
#    submits a job array (sbatch), whose 3 tasks each reconstruct their shard into the shared folder and
#    append to the one journal;
#  - once the array has left the queue: the 5 good outputs = `recon` of the same file byte for byte, every
#    task journalled (shards 0/3, 1/3, 2/3), `batch --status` says 5 done, 1 failed (exit 1);
#  - the bad input replaced and the script resubmitted (`sbatch DIR/larmor-batch.sbatch`, the resume a user
#    does): only that item is redone, --status exits 0, and the contact sheet shows 6 tiles.
# Without slurm/munge installed it fails (installer/install-deps.sh installs them); where the daemons cannot start
# (no rights) it prints "SKIP: <why>" and exits 77 (a skip `make test` does not accept: tests/allowed-skips.txt).
# Usage: slurm_array.sh LARMOR_CLI WORKDIR
set -euo pipefail
cli=$(readlink -f "$1") dir=$2
rm -rf "$dir"; mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in munged munge slurmctld slurmd sbatch squeue sinfo; do
  command -v $tool >/dev/null || fail "$tool not installed (installer/install-deps.sh installs slurmctld slurmd slurm-client munge)"
done

# --- a one-node cluster in $dir/cluster --------------------------------------------------------------------
c=$dir/cluster
mkdir -p "$c/munge" "$c/state" "$c/spool" "$c/log"
chmod 700 "$c/munge"
pids=()
cleanup() {
  set +e
  for f in "$c/slurmd.pid" "$c/slurmctld.pid" "$c/munge/munged.pid"; do
    [[ -s $f ]] || continue
    p=$(cat "$f")
    kill "$p" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

dd if=/dev/urandom of="$c/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$c/munge/munge.key"
munged -f --key-file="$c/munge/munge.key" --socket="$c/munge/socket" --pid-file="$c/munge/munged.pid" \
  --log-file="$c/munge/munged.log" --seed-file="$c/munge/seed" 2> "$c/munge/start.err" \
  || skip "munged did not start: $(tr '\n' ' ' < "$c/munge/start.err")"
for _ in $(seq 1 50); do [[ -S $c/munge/socket ]] && break; sleep 0.1; done
munge -S "$c/munge/socket" -n > /dev/null 2>&1 || skip "munged is not answering on its socket ($(tail -1 "$c/munge/munged.log"))"

# Two free TCP ports (asked of the kernel), so parallel tests and a real Slurm on 6817/6818 do not clash.
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
user=$(id -un)
cat > "$c/slurm.conf" <<CONF
ClusterName=larmortest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$c/munge/socket
CredType=cred/munge
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$c/state
SlurmdSpoolDir=$c/spool
SlurmctldPidFile=$c/slurmctld.pid
SlurmdPidFile=$c/slurmd.pid
SlurmctldLogFile=$c/log/slurmctld.log
SlurmdLogFile=$c/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=localhost NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=larmor Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$c/slurm.conf
slurmctld -c -f "$SLURM_CONF" 2> "$c/log/slurmctld.err" || skip "slurmctld did not start: $(tail -2 "$c/log/slurmctld.err" "$c/log/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
slurmd -f "$SLURM_CONF" -N localhost 2> "$c/log/slurmd.err" || skip "slurmd did not start: $(tail -2 "$c/log/slurmd.err" "$c/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"
for _ in $(seq 1 100); do
  state=$(sinfo -h -n localhost -o %t 2>/dev/null || true)
  [[ $state == idle* ]] && break
  sleep 0.2
done
[[ $state == idle* ]] || skip "the node did not become idle (state '$state'): $(tail -3 "$c/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"
echo "one-node Slurm up: ports $ctld_port/$slurmd_port, $(sinfo -h -o '%P %D %c CPUs %t')"

wait_for_job() {  # until job $1 has left the queue (90 s at most)
  for _ in $(seq 1 450); do
    [[ -z $(squeue -h -j "$1" 2>/dev/null) ]] && return 0
    sleep 0.2
  done
  squeue; fail "job $1 still queued or running after 90 s"
}

# --- the cohort --------------------------------------------------------------------------------------------
mkdir -p "$dir/in"
for i in 1 2 3 5 6; do
  "$cli" simulate --matrix 32 --coils 4 --traj radial --spokes 48 --noise 0.01 --seed $i --output "$dir/in/c$i.h5" >/dev/null
done
head -c 4000 /dev/urandom > "$dir/in/c4.h5"
"$cli" recon "$dir/in/c1.h5" --method cg --iters 20 --device cpu --output "$dir/check.cfl" --save-settings "$dir/S.json" >/dev/null
out=$dir/shared
t0=$(date +%s.%N)
"$cli" batch "$dir/in" --settings "$dir/S.json" --output-dir "$out" --format cfl,png --slurm --shards 3 --max-parallel 2 \
  --partition larmor --time 10 | tee "$dir/submit.txt"
job=$(sed -n 's/^submitted Slurm job \([0-9]*\).*/\1/p' "$dir/submit.txt")
[[ -n $job ]] || fail "no job id in the submission's output"
grep -q -- "--array=0-2%2" "$out/larmor-batch.sbatch" || fail "the script has no --array=0-2%2"
wait_for_job "$job"
echo "array $job finished in $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
ls "$out/slurm-logs"
[[ $(ls "$out/slurm-logs" | wc -l) -eq 3 ]] || fail "expected the logs of 3 array tasks"
for i in 1 2 3 5 6; do
  "$cli" recon "$dir/in/c$i.h5" --method cg --iters 20 --device cpu --output "$dir/ref-c$i.cfl" >/dev/null
  cmp "$out/c$i.cfl" "$dir/ref-c$i.cfl" || { cat "$out"/slurm-logs/*; fail "c$i from the array differs from recon"; }
done
for s in 0/3 1/3 2/3; do grep -q "\"shard\":\"$s\"" "$out/journal.jsonl" || fail "no journal record of shard $s"; done
set +e; "$cli" batch --status "$out" > "$dir/status1.txt"; rc=$?; set -e
cat "$dir/status1.txt"
[[ $rc -eq 1 ]] || fail "--status with a failed item must exit 1"
grep -q "6 items: 5 done, 1 failed, 0 pending" "$dir/status1.txt" || fail "--status counts across the shards"
grep -q "failed .*c4" "$dir/status1.txt" || fail "--status does not name the failed input"

# --- resume: fix the input, resubmit the same script ------------------------------------------------------
rm "$dir/in/c4.h5"  # simulate replaces only a file Larmor wrote
"$cli" simulate --matrix 32 --coils 4 --traj radial --spokes 48 --noise 0.01 --seed 4 --output "$dir/in/c4.h5" >/dev/null
stamp=$(stat -c %y "$out/c1.cfl")
job2=$(sbatch --parsable "$out/larmor-batch.sbatch")
wait_for_job "$job2"
"$cli" batch --status "$out" || { cat "$out"/slurm-logs/*; fail "--status after the resubmission must exit 0"; }
[[ $(stat -c %y "$out/c1.cfl") == "$stamp" ]] || fail "a done item was redone by the resubmission"
[[ $(grep -c '"event":"done"' "$out/journal.jsonl") -eq 6 ]] || fail "expected 6 done records (5 + the fixed one)"
python3 - "$out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
assert s["done"] == 6 and s["failed"] == 0, s
png = open(sys.argv[1] + "/contact-sheet.png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n"
w, h = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
assert (w, h) == (3 * 104, 2 * 115), (w, h)
print("summary: 6 done; contact sheet %dx%d" % (w, h))
PY
echo "slurm_array: OK"
