#!/usr/bin/env bash
# Builds, once, the root the NeMo Gym integration tests run in, and prints
# its path. NeMo Gym 0.7.0 needs Python >= 3.13.14; this machine has 3.11 and
# `uv python install` cannot download here, so the root is Debian unstable
# (its python3.13) made with debootstrap from Debian's own packages, with uv
# and a venv holding nemo-gym==0.7.0 from PyPI. gym's static binary runs
# inside it. Everything is cached under $GYM_CI_CACHE (default
# ~/.cache/gym-ci); a finished root is marked and reused.
#
# Exits 3 (and says why on stderr) when this machine cannot build it: not
# root, no debootstrap and no apt, or Debian or PyPI unreachable.
set -euo pipefail

nemo_gym_version=0.7.0
python=python3.13
cache=${GYM_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gym-ci}
root=$cache/nemo-gym-root
stamp=$root/.gym-ready-nemo-gym-$nemo_gym_version
log=$cache/nemo-gym-root.log

skip() { echo "nemo-gym root: $*" >&2; exit 3; }

if [[ -f $stamp ]]; then
  echo "$root"
  exit 0
fi
[[ $(id -u) == 0 ]] || skip "needs root (debootstrap and chroot); not root"
mkdir -p "$cache"
: >"$log"
if ! command -v debootstrap >/dev/null; then
  command -v apt-get >/dev/null || skip "no debootstrap and no apt-get to install it"
  apt-get update -qq >>"$log" 2>&1 && apt-get install -y -qq debootstrap >>"$log" 2>&1 ||
    skip "cannot install debootstrap from Debian's packages (see $log)"
fi
# uv's own binary (not a shim such as pyenv's), to copy into the root.
if ! uv=$(python3 -c 'import uv; print(uv.find_uv_bin())' 2>/dev/null); then
  python3 -m pip install -q uv >>"$log" 2>&1 || skip "cannot install uv from PyPI (see $log)"
  uv=$(python3 -c 'import uv; print(uv.find_uv_bin())')
fi

# Mounts live in a private mount namespace, so nothing is left mounted when
# the command ends, however it ends.
inroot() {
  unshare --mount --propagation private -- /bin/bash -c '
    r=$1; shift
    for d in proc sys dev; do mount --rbind /$d "$r/$d"; done
    exec chroot "$r" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 SSL_CERT_FILE=/etc/ssl/certs/gym-host-ca.crt "$@"' inroot "$root" "$@"
}

if [[ ! -x $root/usr/bin/$python ]]; then
  rm -rf "$root"
  echo "nemo-gym root: debootstrap Debian unstable into $root (a few minutes, once)" >&2
  debootstrap --variant=minbase --include="$python,ca-certificates,procps" sid "$root" http://deb.debian.org/debian >>"$log" 2>&1 ||
    skip "debootstrap of Debian unstable failed (see $log)"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The host's CA bundle: PyPI may be reached through a proxy whose CA only
# the host trusts.
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/gym-host-ca.crt"
install -m 0755 "$uv" "$root/usr/local/bin/uv"
echo "nemo-gym root: installing nemo-gym==$nemo_gym_version from PyPI (once)" >&2
inroot uv venv --python "/usr/bin/$python" --seed --allow-existing /opt/nemo-gym >>"$log" 2>&1 ||
  skip "uv venv in the root failed (see $log)"
inroot /usr/bin/env UV_CACHE_DIR=/var/cache/uv uv pip install --python /opt/nemo-gym/bin/python "nemo-gym==$nemo_gym_version" >>"$log" 2>&1 ||
  skip "installing nemo-gym==$nemo_gym_version from PyPI failed (see $log)"
touch "$stamp"
echo "$root"
