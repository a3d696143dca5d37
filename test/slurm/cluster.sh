#!/usr/bin/env bash
# A single-node Slurm cluster for the tests, private to one directory: its
# own munge socket and key, its own ports, state and logs, so it never meets
# a system Slurm.
#   cluster.sh start DIR   install what is missing, start munged, slurmctld
#                          and slurmd, wait until the node is idle, print
#                          the SLURM_CONF line to use
#   cluster.sh stop DIR    stop all three
# Exits 3 when no Slurm can be started here (not root, or the packages
# cannot be installed), saying why on stderr.
set -euo pipefail
cmd=${1:?usage: cluster.sh start|stop DIR}
dir=${2:?usage: cluster.sh start|stop DIR}
skip() { echo "$*" >&2; exit 3; }

stop() {
  for p in slurmd slurmctld munged; do
    if [[ -f $dir/$p.pid ]]; then
      kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
    fi
  done
  for p in slurmd slurmctld munged; do
    if [[ -f $dir/$p.pid ]]; then
      pid=$(cat "$dir/$p.pid")
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/$p.pid"
    fi
  done
}

if [[ $cmd == stop ]]; then
  stop
  exit 0
fi
[[ $cmd == start ]] || { echo "usage: cluster.sh start|stop DIR" >&2; exit 2; }
[[ $(id -u) == 0 ]] || skip "a test Slurm cluster needs root (slurmd runs jobs as any user)"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || skip "no Slurm and no apt-get to install Debian's"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge; } >"$dir/apt.log" 2>&1 ||
    skip "cannot install Debian's slurmctld, slurmd, slurm-client and munge: $(tail -1 "$dir/apt.log")"
fi

mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ctl_port=$(free_port)
node_port=$(free_port)
host=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))

# A key of the cluster's own, and munged on a socket of its own.
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"

cat >"$dir/slurm.conf" <<CONF
ClusterName=gymtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$node_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
SchedulerType=sched/backfill
SlurmctldTimeout=30
SlurmdTimeout=30
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" -c -i
slurmd -f "$SLURM_CONF"
for _ in $(seq 300); do
  state=$(sinfo -h -o %t 2>/dev/null || true)
  if [[ $state == idle ]]; then
    echo "SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.1
done
echo "the test Slurm node never became idle (state: ${state:-none}); its logs:" >&2
tail -20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
stop
exit 1
