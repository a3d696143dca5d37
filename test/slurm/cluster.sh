#!/usr/bin/env bash
# A single-node Slurm cluster for the tests, private to one directory: its
# own munge socket and key, its own ports, state and logs, so it never meets
# a system Slurm.
#   cluster.sh start DIR [1|2] [accounting]
#                          install what is missing, start munged,
#                          slurmctld and slurmd, wait until the node is
#                          idle, print the SLURM_CONF line to use; with 2,
#                          two nodes, node1 and node2, each a test host in a
#                          network namespace of its own (its own address
#                          and host name) on a bridge with this host; with
#                          accounting, slurmdbd on a MariaDB of its own, so
#                          that sacct answers
#   cluster.sh stop DIR    stop it all and remove the namespaces
# Exits 3 when no Slurm can be started here (not root, or the packages
# cannot be installed), saying why on stderr.
set -euo pipefail
cmd=${1:?usage: cluster.sh start|stop DIR}
dir=${2:?usage: cluster.sh start|stop DIR}
nodes=${3:-1}
accounting=${4:-}
skip() { echo "$*" >&2; exit 3; }

stop() {
  local daemons=(slurmd slurmd-node1 slurmd-node2 slurmctld slurmdbd mariadbd munged)
  for p in "${daemons[@]}"; do
    if [[ -f $dir/$p.pid ]]; then
      kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
    fi
  done
  for p in "${daemons[@]}"; do
    if [[ -f $dir/$p.pid ]]; then
      pid=$(cat "$dir/$p.pid")
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/$p.pid"
    fi
  done
  if [[ -f $dir/net ]]; then
    read -r bridge ns1 ns2 <"$dir/net"
    for ns in "$ns1" "$ns2"; do
      ip netns del "$ns" 2>/dev/null || true
      rm -rf "/etc/netns/$ns"
    done
    ip link del "$bridge" 2>/dev/null || true
    rm -f "$dir/net"
  fi
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

[[ $nodes == 1 || $nodes == 2 ]] || { echo "cluster.sh: 1 or 2 nodes, not $nodes" >&2; exit 2; }
if [[ $accounting == accounting ]] && { ! command -v slurmdbd >/dev/null || ! command -v mariadbd >/dev/null; }; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmdbd mariadb-server; } >"$dir/apt-dbd.log" 2>&1 ||
    skip "cannot install Debian's slurmdbd and mariadb-server: $(tail -1 "$dir/apt-dbd.log")"
fi
if [[ $nodes == 2 ]]; then
  command -v ip >/dev/null && command -v nsenter >/dev/null && command -v unshare >/dev/null ||
    skip "two test nodes need ip (iproute2), nsenter and unshare"
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
# A loaded two-CPU machine answers late: neither is slurmd declared down
# for it nor, when a step is killed slowly, its node drained.
SlurmdTimeout=120
UnkillableStepTimeout=180
MinJobAge=300
# A test that times out prints how the daemons' logs end: at verbose they
# say what a step was signalled with and what it still waits for.
SlurmdDebug=verbose
SlurmctldDebug=verbose
CONF

export SLURM_CONF=$dir/slurm.conf
if [[ $accounting == accounting ]]; then
  # MariaDB on a socket and port of its own, without grant tables: it
  # holds only this cluster's accounting and listens on loopback.
  db_port=$(free_port)
  dbd_port=$(free_port)
  mariadb-install-db --user=root --datadir="$dir/mysql" --auth-root-authentication-method=normal --skip-test-db >"$dir/mariadb-install.log" 2>&1
  setsid mariadbd --user=root --datadir="$dir/mysql" --socket="$dir/mysql.sock" --port="$db_port" --bind-address=127.0.0.1 \
    --pid-file="$dir/mariadbd.pid" --skip-grant-tables --log-error="$dir/mariadb.log" </dev/null >/dev/null 2>&1 &
  for _ in $(seq 100); do mariadb -S "$dir/mysql.sock" -e 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
  cat >"$dir/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
PidFile=$dir/slurmdbd.pid
LogFile=$dir/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=root
StorageLoc=slurm_acct_db
CONF
  chmod 600 "$dir/slurmdbd.conf"
  sed -i "s|^AccountingStorageType=.*|AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=127.0.0.1\nAccountingStoragePort=$dbd_port\nAccountingStoragePass=$dir/munge/munge.sock|" "$SLURM_CONF"
  # slurmdbd reads the slurmdbd.conf beside SLURM_CONF.
  slurmdbd
  for _ in $(seq 100); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.1; done
  sacctmgr -i add cluster gymtest >/dev/null
fi
if [[ $nodes == 1 ]]; then
  echo "NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN" >>"$SLURM_CONF"
else
  # Two test hosts on a bridge: 10.218.<n>.2 and .3, this host .1; each
  # names itself (UTS namespace) and resolves both (a hosts file of its
  # own), so use_absolute_ip gives each its own address.
  n=$(( $(echo "$dir" | cksum | cut -d' ' -f1) % 250 ))
  bridge=gymbr$n ns1=gymn${n}a ns2=gymn${n}b
  echo "$bridge $ns1 $ns2" >"$dir/net"
  ip link add "$bridge" type bridge
  ip addr add "10.218.$n.1/24" dev "$bridge"
  ip link set "$bridge" up
  i=1
  for ns in "$ns1" "$ns2"; do
    ip netns add "$ns"
    ip link add "gv$n$i" type veth peer name "gv${n}n$i"
    ip link set "gv$n$i" master "$bridge"
    ip link set "gv$n$i" up
    ip link set "gv${n}n$i" netns "$ns"
    ip -n "$ns" addr add "10.218.$n.$((i + 1))/24" dev "gv${n}n$i"
    ip -n "$ns" link set "gv${n}n$i" up
    ip -n "$ns" link set lo up
    mkdir -p "/etc/netns/$ns"
    printf '127.0.0.1 localhost\n10.218.%s.2 node1\n10.218.%s.3 node2\n10.218.%s.1 %s\n' "$n" "$n" "$n" "$host" >"/etc/netns/$ns/hosts"
    echo "NodeName=node$i NodeAddr=10.218.$n.$((i + 1)) NodeHostname=node$i CPUs=1 RealMemory=1000 State=UNKNOWN" >>"$SLURM_CONF"
    i=$((i + 1))
  done
  sed -i "s/^SlurmctldHost=.*/SlurmctldHost=$host(10.218.$n.1)/; s|^SlurmdPidFile=.*|SlurmdPidFile=$dir/slurmd-%n.pid|; s|^SlurmdSpoolDir=.*|SlurmdSpoolDir=$dir/spool-%n|; s|^SlurmdLogFile=.*|SlurmdLogFile=$dir/slurmd-%n.log|" "$SLURM_CONF"
fi
echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$SLURM_CONF"
slurmctld -f "$SLURM_CONF" -c -i
if [[ $nodes == 1 ]]; then
  slurmd -f "$SLURM_CONF"
else
  i=1
  for ns in "$ns1" "$ns2"; do
    # nsenter, not `ip netns exec`, which mounts a sysfs without the
    # cgroup hierarchy slurmd needs.
    nsenter --net="/var/run/netns/$ns" unshare --uts --mount --propagation private \
      sh -c "mount --bind /etc/netns/$ns/hosts /etc/hosts && hostname node$i && exec slurmd -f '$SLURM_CONF' -N node$i"
    i=$((i + 1))
  done
fi
for _ in $(seq 300); do
  state=$(sinfo -h -o %t 2>/dev/null | sort -u | tr '\n' ' ' || true)
  if [[ $state == "idle " ]]; then
    echo "SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.1
done
echo "the test Slurm node never became idle (state: ${state:-none}); its logs:" >&2
tail -20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
stop
exit 1
