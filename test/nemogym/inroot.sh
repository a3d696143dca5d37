#!/usr/bin/env bash
# inroot.sh ROOT [--bind DIR]... [--env K=V]... -- CMD [ARG]...
# Runs CMD chrooted into ROOT (made by root.sh) in a private mount
# namespace: /proc, /sys and /dev, and each --bind DIR at the same path, are
# mounted only for CMD and vanish with it, however it ends. The environment
# is a clean one plus each --env (and this host's proxy and index settings).
set -euo pipefail
root=$1; shift
binds=() envs=()
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --bind) binds+=("$2"); shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    *) echo "inroot.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
shift
# How this host reaches PyPI, kept for the commands inside.
for name in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy UV_INDEX_URL UV_EXTRA_INDEX_URL UV_INDEX_STRATEGY PIP_INDEX_URL; do
  if [[ -n ${!name:-} ]]; then envs=("$name=${!name}" "${envs[@]}"); fi
done
exec unshare --mount --propagation private -- /bin/bash -c '
  set -e
  r=$1 n=$2; shift 2
  for d in proc sys dev; do mount --rbind "/$d" "$r/$d"; done
  mount -t tmpfs tmpfs "$r/dev/shm" 2>/dev/null || true
  for ((i = 0; i < n; i++)); do
    mkdir -p "$r$1"; mount --bind "$1" "$r$1"; shift
  done
  exec chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
    PATH=/opt/nemo-gym/bin:/usr/local/bin:/usr/bin:/bin \
    SSL_CERT_FILE=/etc/ssl/certs/gym-host-ca.crt PIP_CERT=/etc/ssl/certs/gym-host-ca.crt UV_CACHE_DIR=/var/cache/uv "$@"
' inroot "$root" "${#binds[@]}" "${binds[@]}" "${envs[@]}" "$@"
