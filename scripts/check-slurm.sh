#!/usr/bin/env bash
# A distributed `eval` under a real Slurm: starts a one-node cluster on localhost (munged,
# slurmctld, slurmd from Debian's packages, with a generated slurm.conf in a temporary folder),
# submits examples/slurm/eval.sbatch with 2 tasks on stories260K and checks that
#   - the job completed with exit status 0,
#   - its two tasks ran as ranks 0 and 1 of a world of 2, and only rank 0 printed the result,
#   - the perplexity and mean NLL it printed are, as text, the ones a single `quantscope-cli
#     eval` of the same inputs prints (docs/distributed.md: the same double at any world size).
# Then it stops every daemon it started and removes its folder, also on failure or Ctrl-C.
#
#   scripts/check-slurm.sh [CLI]   (CLI: a quantscope-cli, relative to the current directory;
#                                   default $QS_CLI, else the repository's
#                                   build/release/bin/quantscope-cli; needs ../shared or
#                                   QS_SHARED_DIR)
#
# Needs root (slurmd runs the job steps as the submitting user and SlurmUser is root) and no
# systemd: the daemons are started by hand. The packages slurmctld, slurmd, slurm-client and munge
# are installed with apt-get when a command is missing (Debian 12: Slurm 22.05.8, MUNGE 0.5.15).
# Nothing outside the temporary folder is configured: the daemons get their own munge key and
# socket, free TCP ports, and state, spool and log folders there, and every Slurm command reads
# SLURM_CONF, so a Slurm or munged already on the machine is neither used nor disturbed.
# The cluster: one node with this machine's CPUs and memory (as `slurmd -C` reports them),
# ProctrackType=proctrack/linuxproc and TaskPlugin=task/none (no cgroups), select/cons_tres.
# Exit status: 0 when the check passes, 1 when it fails, 2 on a usage or setup error.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."
repo=$PWD
started=$(date +%s.%N)

say() { echo "check-slurm: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
setup_error() { say "cannot run: $*"; exit 2; }

case "${1:-}" in
-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
# A CLI named by the caller is relative to the caller's directory; the default to the repository.
if [ -n "${1:-${QS_CLI:-}}" ]; then
    cli=${1:-$QS_CLI}
    [[ "$cli" == /* ]] || cli=$caller/$cli
else
    cli=$repo/build/release/bin/quantscope-cli
fi
shared=${QS_SHARED_DIR:-../shared}
[[ "$shared" == /* ]] || shared=$repo/$shared
model=$shared/models/stories260K
data=$shared/data/tinystories-eval.txt
sbatch_script=$repo/examples/slurm/eval.sbatch
[ -x "$cli" ] || setup_error "$cli is not an executable quantscope-cli (give its path, or build first)"
[ -d "$model" ] && [ -f "$data" ] || setup_error "$model or $data is missing (set QS_SHARED_DIR)"
[ "$(id -u)" -eq 0 ] || setup_error "must run as root (the one-node cluster runs its jobs as root)"

# A launch environment around this script (an allocation, a torchrun) is not the check's.
while read -r v; do unset "$v"; done < <(compgen -e | grep -E '^(SLURM_|SBATCH_|SRUN_|SALLOC_)' || true)
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
export QS_CACHE_DIR=off

# --- packages -----------------------------------------------------------------------------------
need=()
for c in munged:munge mungekey:munge slurmctld slurmd sbatch:slurm-client srun:slurm-client \
    scontrol:slurm-client sinfo:slurm-client; do
    command -v "${c%%:*}" >/dev/null 2>&1 || need+=("${c#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
    pkgs=$(printf '%s\n' "${need[@]}" | sort -u | tr '\n' ' ')
    command -v apt-get >/dev/null || setup_error "missing $pkgs and no apt-get to install them"
    say "installing $pkgs(apt-get)"
    # A package's postinst may start its daemon where policy-rc.d allows it: those are stopped
    # again below, by process id, so the machine keeps running what it ran before.
    before=$(pgrep -x 'munged|slurmctld|slurmd' 2>/dev/null | sort || true)
    # shellcheck disable=SC2086 # one package per word
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $pkgs \
        >/tmp/check-slurm-apt.$$.log 2>&1 || {
        DEBIAN_FRONTEND=noninteractive apt-get update -q >>/tmp/check-slurm-apt.$$.log 2>&1 || true
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $pkgs \
            >>/tmp/check-slurm-apt.$$.log 2>&1 ||
            { tail -20 /tmp/check-slurm-apt.$$.log >&2; setup_error "apt-get install $pkgs failed"; }
    }
    rm -f /tmp/check-slurm-apt.$$.log
    for p in $(comm -13 <(echo "$before") <(pgrep -x 'munged|slurmctld|slurmd' 2>/dev/null | sort || true)); do
        say "stopping $(cat /proc/"$p"/comm 2>/dev/null) (pid $p), started by the package install"
        kill "$p" 2>/dev/null || true
    done
fi

# --- temporary cluster --------------------------------------------------------------------------
tmp=$(mktemp -d /tmp/qs-check-slurm.XXXXXX)
pids=()   # daemons this script started, stopped in reverse order
jobid=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$jobid" ] && [ "$rc" -ne 0 ]; then
        scancel "$jobid" 2>/dev/null || true
        for _ in $(seq 50); do
            squeue -h -j "$jobid" 2>/dev/null | grep -q . || break
            sleep 0.1
        done
    fi
    if [ "$rc" -ne 0 ] && [ -d "$tmp/log" ]; then
        for f in "$tmp"/log/*.log; do
            [ -s "$f" ] || continue
            echo "--- last lines of $(basename "$f")" >&2
            tail -n 15 "$f" >&2
        done
    fi
    local i p
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        p=${pids[i]}
        kill "$p" 2>/dev/null || continue
        for _ in $(seq 50); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$p" 2>/dev/null && { say "pid $p ignored SIGTERM; killing it"; kill -9 "$p" 2>/dev/null || true; }
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A TCP port on 127.0.0.1 nothing listens on now (checked with bash's /dev/tcp), outside the
# ephemeral range and distinct from the ones this script took already; stored in the variable
# named by $1.
taken=" "
free_port() {
    local p
    for _ in $(seq 200); do
        p=$((20000 + RANDOM % 12000))
        [[ "$taken" == *" $p "* ]] && continue
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            taken+="$p "
            printf -v "$1" '%s' "$p"
            return
        fi
    done
    setup_error "no free TCP port found on 127.0.0.1"
}
free_port ctld_port
free_port slurmd_port
free_port master_port

# munged checks its folders: the key's may be readable by root only, the socket's must be
# searchable by everyone.
chmod 755 "$tmp"
mkdir -p "$tmp/munge" "$tmp/run" "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/job"
chmod 700 "$tmp/munge"
if command -v mungekey >/dev/null; then
    mungekey --create --keyfile="$tmp/munge/munge.key" >/dev/null
else
    dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 400 "$tmp/munge/munge.key"
socket=$tmp/run/munge.sock
munged -F --key-file="$tmp/munge/munge.key" --socket="$socket" --pid-file="$tmp/run/munged.pid" \
    --log-file="$tmp/log/munged.log" --seed-file="$tmp/munge/seed" >"$tmp/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$socket" ] && break; kill -0 "${pids[0]}" 2>/dev/null || break; sleep 0.1; done
munge -S "$socket" -n 2>/dev/null | unmunge -S "$socket" >/dev/null 2>&1 ||
    { cat "$tmp/log/munged.out" >&2; die "munged did not start (a credential did not round-trip)"; }

node=$(hostname -s)
# The node's CPUs, sockets, cores and memory as slurmd itself measures them: a node declared
# bigger than it is would be drained at registration.
hw=$(slurmd -C | sed -n '1s/^NodeName=[^ ]* //p')
[ -n "$hw" ] || setup_error "slurmd -C did not describe this machine"
export SLURM_CONF=$tmp/slurm.conf
cat >"$SLURM_CONF" <<EOF
# Generated by scripts/check-slurm.sh: a one-node cluster on localhost, removed after the check.
ClusterName=qscheck
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=check Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
# -D: in the foreground, so $! is the daemon; -c: no state from an earlier cluster.
slurmctld -D -c -f "$SLURM_CONF" >"$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$tmp/log/slurmd.out" 2>&1 &
pids+=($!)

# Wait for the node to register idle.
state=""
for _ in $(seq 150); do
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || die "a daemon exited at start (pid $p)"; done
    state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.2
done
[ "$state" = idle ] || die "node $node is '${state:-unreachable}' after 30 s, not idle"
say "one-node cluster up: $node, $hw"

# --- the job ------------------------------------------------------------------------------------
# 20 windows of 256 tokens are three scoring batches (8, 8 and 4 windows): rank 0 scores shards
# 0 and 2, rank 1 shard 1, so both ranks contribute and the order of the sum matters.
eval_args=(--eval-seq-len 256 --max-windows 20 --json --quiet --dist-timeout 60)
# The single-process reference, with the threads each task gets (--cpus-per-task=1).
ref=$("$cli" eval "$model" --data "$data" --threads 1 "${eval_args[@]}") ||
    die "the single-process eval failed"

# MASTER_PORT: a port found free now, rather than the example's default from the job id. Rank 0
# is found by the node's name (the first host of SLURM_JOB_NODELIST); where that name does not
# resolve, MASTER_ADDR points the ranks at the loopback address instead.
master_env=()
if ! getent hosts "$node" >/dev/null 2>&1; then
    say "$node does not resolve (getent hosts): the ranks meet at MASTER_ADDR=127.0.0.1"
    master_env=(MASTER_ADDR=127.0.0.1)
fi
jobid=$(cd "$tmp/job" && env "${master_env[@]}" MASTER_PORT=$master_port QS_CLI=$cli \
    sbatch --parsable --ntasks=2 --nodes=1 --cpus-per-task=1 --time=5 \
    --output="$tmp/job/out" --error="$tmp/job/err" \
    "$sbatch_script" "$model" "$data" "${eval_args[@]}") || die "sbatch refused the job"
jobid=${jobid%%;*}
say "submitted job $jobid (examples/slurm/eval.sbatch, 2 tasks, rank 0 on port $master_port)"
jstate=""
for _ in $(seq 600); do
    info=$(scontrol -o show job "$jobid" 2>/dev/null || true)
    jstate=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$info")
    case "$jstate" in PENDING | RUNNING | CONFIGURING | COMPLETING | "") sleep 0.2 ;; *) break ;; esac
done
exitcode=$(sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p' <<<"$info")
out=$(cat "$tmp/job/out" 2>/dev/null || true)
err=$(cat "$tmp/job/err" 2>/dev/null || true)
show_job() { echo "--- job stdout"; echo "$out"; echo "--- job stderr"; echo "$err"; } >&2
case "$jstate" in
COMPLETED) ;;
PENDING | RUNNING | CONFIGURING | COMPLETING | "")
    show_job; die "job $jobid still ${jstate:-unknown} after 120 s ($(sed -n 's/.*\(Reason=[^ ]*\).*/\1/p' <<<"$info"))" ;;
*) show_job; die "job $jobid ended $jstate with exit status $exitcode" ;;
esac
[ "$exitcode" = 0:0 ] || { show_job; die "job $jobid exit status $exitcode, not 0:0"; }

# --- the checks ---------------------------------------------------------------------------------
ranks=$(grep -E '^task [0-9]+: rank [0-9]+ of [0-9]+ ' <<<"$err" | sed 's/ on .*//' | sort || true)
[ "$ranks" = $'task 0: rank 0 of 2\ntask 1: rank 1 of 2' ] ||
    { show_job; die "the tasks were not ranks 0 and 1 of a world of 2: '${ranks//$'\n'/; }'"; }
# Rank 0 alone reports; a task that ran as a world of 1 would print a second result.
results=$(grep -c '"perplexity"' <<<"$out" || true)
[ "$results" = 1 ] || { show_job; die "$results results printed, expected rank 0's only"; }
field() { sed -n "s/^ *\"$1\": \([^,]*\),\{0,1\}\$/\1/p" <<<"$2" | head -n 1; }
for f in perplexity mean_nll tokens windows; do
    a=$(field "$f" "$ref")
    b=$(field "$f" "$out")
    [ -n "$a" ] || die "the single-process eval printed no $f"
    [ "$a" = "$b" ] || { show_job; die "$f differs: $b with 2 Slurm tasks, $a in one process"; }
done
elapsed=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
say "ok: 2 tasks as ranks 0 and 1 of 2, perplexity $(field perplexity "$out") and mean NLL" \
    "$(field mean_nll "$out") equal to one process's ($elapsed s)"
