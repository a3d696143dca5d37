#!/usr/bin/env bash
# Builds, once, the root the NeMo Gym integration tests run in, and prints
# its path. nemo-gym 0.7.0 needs Python >= 3.13.14, which Debian 12 and
# most CI images lack, and `uv python install` downloads from GitHub, which
# CI may not reach; so the root is Debian unstable (its python3.13) made
# with debootstrap from Debian's own packages, with uv and a venv holding
# nemo-gym==0.7.0, both from PyPI. gym's static binary runs inside it.
# Everything is cached under $GYM_CI_CACHE (default ~/.cache/gym-ci); a
# finished root is marked and reused.
#
# Exits 3, saying why on stderr, when this machine cannot run the tests at
# all: not root, or PyPI (or, to build the root, Debian) unreachable. Any
# other failure exits 1.
set -euo pipefail

nemo_gym_version=0.7.0
python=python3.13
cache=${GYM_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gym-ci}
root=$cache/nemo-gym-root
stamp=$root/.gym-ready-nemo-gym-$nemo_gym_version-2
log=$cache/nemo-gym-root.log
here=$(cd "$(dirname "$0")" && pwd)

skip() { echo "nemo-gym root: $*" >&2; exit 3; }
fail() { echo "nemo-gym root: $*" >&2; exit 1; }

reachable() {
  if command -v curl >/dev/null; then
    curl -fsS -o /dev/null --max-time 20 "$1"
  else
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=20)' "$1"
  fi
}

[[ $(id -u) == 0 ]] || skip "needs root (debootstrap and chroot); not root"
# The tests install nemo-gym into fresh venvs, so PyPI is needed every run.
reachable https://pypi.org/simple/nemo-gym/ 2>/dev/null || skip "PyPI (https://pypi.org/simple/nemo-gym/) is unreachable"
if [[ -f $stamp ]]; then
  echo "$root"
  exit 0
fi
mkdir -p "$cache"
: >"$log"
if [[ ! -x $root/usr/bin/$python ]]; then
  reachable http://deb.debian.org/debian/dists/sid/Release 2>/dev/null || skip "Debian's archive (deb.debian.org) is unreachable"
  if ! command -v debootstrap >/dev/null; then
    command -v apt-get >/dev/null || skip "no debootstrap, and no apt-get to install it"
    { apt-get update -qq && apt-get install -y -qq debootstrap; } >>"$log" 2>&1 ||
      fail "cannot install debootstrap from Debian's packages (see $log)"
  fi
  rm -rf "$root"
  echo "nemo-gym root: debootstrap Debian unstable into $root (a few minutes, once)" >&2
  debootstrap --variant=minbase --include="$python,$python-venv,ca-certificates,procps" sid "$root" http://deb.debian.org/debian >>"$log" 2>&1 ||
    fail "debootstrap of Debian unstable failed (see $log)"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The host's CA bundle, when it has one: PyPI may be reached through a proxy
# whose CA only the host trusts.
for bundle in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
  if [[ -f $bundle ]]; then
    cp "$bundle" "$root/etc/ssl/certs/gym-host-ca.crt"
    break
  fi
done
[[ -f $root/etc/ssl/certs/gym-host-ca.crt ]] || cp "$root/etc/ssl/certs/ca-certificates.crt" "$root/etc/ssl/certs/gym-host-ca.crt"
inroot() { "$here/inroot.sh" "$root" -- "$@"; }
# python3.13 -m venv needs ensurepip, which Debian ships in python3.13-venv.
if [[ ! -f $root/usr/lib/$python/ensurepip/__init__.py ]]; then
  inroot apt-get install -y -qq "$python-venv" >>"$log" 2>&1 || fail "cannot install $python-venv in the root (see $log)"
fi
echo "nemo-gym root: installing uv and nemo-gym==$nemo_gym_version from PyPI (once)" >&2
inroot "/usr/bin/$python" -m venv /opt/uv >>"$log" 2>&1 || fail "$python -m venv in the root failed (see $log)"
inroot /opt/uv/bin/pip install -q uv >>"$log" 2>&1 || fail "pip install uv in the root failed (see $log)"
ln -sf /opt/uv/bin/uv "$root/usr/local/bin/uv"
inroot uv venv --python "/usr/bin/$python" --seed --allow-existing /opt/nemo-gym >>"$log" 2>&1 ||
  fail "uv venv in the root failed (see $log)"
inroot uv pip install --python /opt/nemo-gym/bin/python "nemo-gym==$nemo_gym_version" >>"$log" 2>&1 ||
  fail "installing nemo-gym==$nemo_gym_version from PyPI failed (see $log)"
touch "$stamp"
echo "$root"
