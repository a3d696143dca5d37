#!/usr/bin/env bash
# An SSH server for the tests on a free loopback port, private to one
# directory: its own host key, the one client key it accepts, and an ssh
# wrapper that reaches it as the host "gym-login" — a login node whose
# sessions see the test cluster's SLURM_CONF.
#   sshd.sh start DIR SLURM_CONF  install openssh-server if missing, start
#                                 sshd, print the directory holding the
#                                 ssh wrapper (put it first on PATH)
#   sshd.sh stop DIR
# Exits 3 when no sshd can be started here, saying why on stderr.
set -euo pipefail
cmd=${1:?usage: sshd.sh start DIR SLURM_CONF | stop DIR}
dir=${2:?usage: sshd.sh start DIR SLURM_CONF | stop DIR}
skip() { echo "$*" >&2; exit 3; }

if [[ $cmd == stop ]]; then
  if [[ -f $dir/sshd.pid ]]; then
    kill "$(cat "$dir/sshd.pid")" 2>/dev/null || true
    rm -f "$dir/sshd.pid"
  fi
  exit 0
fi
[[ $cmd == start ]] || { echo "usage: sshd.sh start DIR SLURM_CONF | stop DIR" >&2; exit 2; }
slurm_conf=${3:?usage: sshd.sh start DIR SLURM_CONF}
[[ $(id -u) == 0 ]] || skip "a test sshd needs root (it logs in as the test's user with its own config)"
if [[ ! -x /usr/sbin/sshd ]]; then
  command -v apt-get >/dev/null || skip "no sshd and no apt-get to install Debian's openssh-server"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client; } >"$dir/apt-ssh.log" 2>&1 ||
    skip "cannot install Debian's openssh-server: $(tail -1 "$dir/apt-ssh.log")"
fi
mkdir -p "$dir/bin" /run/sshd
rm -f "$dir/host_key" "$dir/client_key"
ssh-keygen -q -t ed25519 -N '' -C gym-test-host -f "$dir/host_key"
ssh-keygen -q -t ed25519 -N '' -C gym-test-client -f "$dir/client_key"
cp "$dir/client_key.pub" "$dir/authorized_keys"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$dir/sshd_config" <<CONF
Port $port
ListenAddress 127.0.0.1
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
SetEnv SLURM_CONF=$slurm_conf
CONF
cat >"$dir/ssh_config" <<CONF
Host gym-login
  HostName 127.0.0.1
  Port $port
  IdentityFile $dir/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
CONF
real_ssh=$(command -v ssh)
cat >"$dir/bin/ssh" <<WRAP
#!/bin/sh
exec $real_ssh -F $dir/ssh_config "\$@"
WRAP
chmod 755 "$dir/bin/ssh"
/usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
for _ in $(seq 100); do
  if "$dir/bin/ssh" -o BatchMode=yes -o StrictHostKeyChecking=accept-new gym-login true 2>/dev/null; then
    echo "$dir/bin"
    exit 0
  fi
  sleep 0.1
done
echo "sshd did not accept a login within 10 s:" >&2
cat "$dir/sshd.log" >&2
exit 1
