#!/usr/bin/env bash
# A real Slurm cluster on this one machine, for Keel's cluster tests:
# MUNGE, one slurmctld and 2-4 slurmd as separate nodes n1..nN (Debian's
# slurmd runs several per host with -N NODENAME, each on its own port).
#
#   bash scripts/slurm-local.sh up [NODES]   # install what is missing, start; prints SLURM_CONF=...
#   bash scripts/slurm-local.sh mode gang   # Slurm's own gang scheduling on (the baseline); `mode keel`: off
#   bash scripts/slurm-local.sh status      # sinfo of the running cluster
#   bash scripts/slurm-local.sh down        # stop every daemon it started, remove its files
#
# Needs root (it installs Debian's slurm-wlm and munge, and slurmd runs
# jobs as their users). Its files live in /run/keel-slurm (root's, mode
# 0700; a symbolic link there is refused); the daemons' configuration is
# /run/keel-slurm/slurm.conf, which `export SLURM_CONF=...` hands to srun,
# sinfo and the tests. Each node has one CPU (this machine has two), the
# partition `keel` oversubscribes (OverSubscribe=FORCE:4): jobs share the
# nodes and Keel's managers decide who runs when. `mode gang` turns on
# Slurm's own gang scheduling (PreemptMode=GANG, 5 s slices) instead, the
# baseline Keel's coscheduling is compared with.
set -euo pipefail

dir=/run/keel-slurm
conf=$dir/slurm.conf
ctld_port=${KEEL_SLURMCTLD_PORT:-16817}
first_node_port=${KEEL_SLURMD_PORT:-16818}

die() { echo "slurm-local: $*" >&2; exit 1; }

need_root() { [ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts slurmd)"; }

install_missing() {
    local missing=()
    command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
    command -v slurmd >/dev/null 2>&1 || missing+=(slurmd)
    command -v srun >/dev/null 2>&1 || missing+=(slurm-client)
    command -v munged >/dev/null 2>&1 || missing+=(munge)
    # spank.h, to build Keel's SPANK plugin; libmunge, which Keel's
    # cluster daemons load to seal their messages.
    [ -f /usr/include/slurm/spank.h ] || missing+=(libslurm-dev)
    ldconfig -p 2>/dev/null | grep -q 'libmunge\.so\.2' || missing+=(libmunge2)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "slurm-local: installing ${missing[*]} (Debian packages)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq "${missing[@]}" >/dev/null \
            || { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; } \
            || die "could not install ${missing[*]}: apt-get failed (is a Debian mirror reachable?)"
    else
        echo "slurm-local: slurmctld, slurmd, srun, munged, spank.h and libmunge are installed"
    fi
}

# The state folder: root's, private, never through a link.
make_dir() {
    if [ -L "$dir" ]; then die "$dir is a symbolic link: refusing"; fi
    mkdir -p -m 0700 "$dir"
    [ "$(stat -c %u "$dir")" = 0 ] || die "$dir is not root's"
    chmod 0700 "$dir"
}

start_munge() {
    if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
        echo "slurm-local: munged answers already"
        return
    fi
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey --create --keyfile=/etc/munge/munge.key >/dev/null 2>&1 \
            || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
        chown munge:munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge && chown munge:munge /run/munge && chmod 0755 /run/munge
    runuser -u munge -- /usr/sbin/munged --pid-file="$dir/munged.pid" 2>/dev/null \
        || runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 50); do
        if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
            touch "$dir/started-munged"
            echo "slurm-local: munged started"
            return
        fi
        sleep 0.1
    done
    die "munged does not answer (see /var/log/munge/munged.log)"
}

write_conf() {
    local nodes=$1 preempt=${2:-OFF} last_port=$((first_node_port + nodes - 1))
    cat >"$conf" <<EOF
# Written by scripts/slurm-local.sh: $nodes nodes on this machine.
ClusterName=keel
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/slurmd-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/linear
PreemptType=preempt/none
PreemptMode=$preempt
SchedulerTimeSlice=30
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
PlugStackConfig=$dir/plugstack.conf
NodeName=n[1-$nodes] NodeHostname=localhost CPUs=1 RealMemory=512 Port=$first_node_port-$last_port State=UNKNOWN
PartitionName=keel Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
    # Keel's SPANK plugin (`srun --keel-cosched`), once a test or the
    # operator installs it there; `optional`: a missing file is skipped.
    # Each slurmd of this host reaches its own node manager (%n: the
    # node's name).
    echo "optional $dir/keel_cosched_spank.so socket=$dir/nm-%n.sock" >"$dir/plugstack.conf"
    mkdir -p -m 0700 "$dir/ctld"
}

wait_idle() {
    local nodes=$1
    for _ in $(seq 100); do
        local idle
        idle=$(SLURM_CONF=$conf sinfo -h -N -o '%N %t' 2>/dev/null | grep -c -E ' (idle|mix|alloc)$' || true)
        if [ "$idle" -ge "$nodes" ]; then
            return 0
        fi
        sleep 0.2
    done
    SLURM_CONF=$conf sinfo -N >&2 || true
    tail -n 20 "$dir"/slurmctld.log "$dir"/slurmd-*.log >&2 2>/dev/null || true
    die "the $nodes nodes did not become idle within 20 s"
}

up() {
    local nodes=${1:-2}
    case $nodes in 2 | 3 | 4) ;; *) die "NODES must be 2, 3 or 4 (got $nodes)" ;; esac
    need_root
    install_missing
    if [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
        die "a cluster is up already ($conf); run 'down' first"
    fi
    make_dir
    start_munge
    write_conf "$nodes"
    slurmctld -f "$conf" -i
    for n in $(seq 1 "$nodes"); do
        mkdir -p -m 0700 "$dir/slurmd-n$n"
        slurmd -f "$conf" -N "n$n"
    done
    wait_idle "$nodes"
    echo "slurm-local: $nodes nodes up (partition keel)"
    echo "SLURM_CONF=$conf"
}

stop_pid() {
    local file=$1
    [ -f "$file" ] || return 0
    local pid
    pid=$(cat "$file")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
}

# Slurm's own gang scheduling (PreemptMode=GANG) time-slices jobs that
# share nodes every SchedulerTimeSlice; Keel's managers decide that
# themselves, so the cluster runs with it off (`keel`) unless the baseline
# is measured (`gang`). The controller restarts; no job may be running.
mode() {
    local want=$1 preempt
    case $want in keel) preempt=OFF ;; gang) preempt=GANG ;; *) die "mode must be keel or gang (got $want)" ;; esac
    need_root
    [ -f "$conf" ] || die "no cluster is up ($conf is missing)"
    # Jobs that just ended stay listed while they complete (CG).
    for _ in $(seq 150); do
        [ -z "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.2
    done
    if [ -n "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ]; then
        die "jobs are queued or running: switch modes on an idle cluster"
    fi
    local nodes
    nodes=$(grep -c '' <(ls "$dir"/slurmd-n*.pid 2>/dev/null))
    write_conf "$nodes" "$preempt"
    stop_pid "$dir/slurmctld.pid"
    slurmctld -f "$conf" -i
    wait_idle "$nodes"
    echo "slurm-local: mode $want (PreemptMode=$preempt)"
}

down() {
    need_root
    [ -d "$dir" ] || { echo "slurm-local: nothing is up"; return 0; }
    if [ -L "$dir" ]; then die "$dir is a symbolic link: refusing"; fi
    for f in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid; do stop_pid "$f"; done
    if [ -f "$dir/started-munged" ]; then
        stop_pid "$dir/munged.pid"
        pkill -u munge -x munged 2>/dev/null || true
    fi
    rm -rf --one-file-system "$dir"
    echo "slurm-local: down"
}

case ${1:-} in
    up) up "${2:-2}" ;;
    down) down ;;
    mode) mode "${2:-}" ;;
    status) SLURM_CONF=$conf sinfo -N ;;
    *) die "usage: $0 up [2|3|4] | mode keel|gang | status | down" ;;
esac
