#!/usr/bin/env bash
# Lays out the image's root in $1: batchd and batchctl from bin/, the C
# runtime they link (ldd says which) from Debian's libc6 package at the
# installed version (the glibc the binaries were built against), a
# non-root user, writable run/state/tmp directories. No shell, no package
# manager: batchd's template worker is batchd itself.
set -euo pipefail
root=$1 bin=${2:-bin}
rm -rf "$root" && mkdir -p "$root"/{usr/bin,etc/batchd,models,run/batchd,var/lib/batchd,tmp}
install -m 0755 "$bin/batchd" "$bin/batchctl" "$root/usr/bin/"

ver=$(dpkg-query -W -f='${Version}' libc6)
debs=$(dirname "$root")/debs
mkdir -p "$debs"
deb=$(ls "$debs"/libc6_"${ver//:/%3a}"_*.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ]; then
  (cd "$debs" && apt-get download -q "libc6=$ver" >/dev/null 2>&1) ||
    { apt-get update -qq && (cd "$debs" && apt-get download -q "libc6=$ver"); }
  deb=$(ls "$debs"/libc6_*.deb | head -1)
fi
libc=$(mktemp -d)
trap 'rm -rf "$libc"' EXIT
dpkg-deb -x "$deb" "$libc"
# Each library the binaries need, at the path the dynamic linker looks.
for lib in $(ldd "$bin/batchd" "$bin/batchctl" | awk '/=>/ {print $3} /ld-linux/ && !/=>/ {print $1}' | sort -u); do
  real=$(readlink -f "$lib")
  src="$libc$real"
  [ -e "$src" ] || src="$libc/usr$real"
  [ -e "$src" ] || src="$libc${real#/usr}"
  [ -e "$src" ] || { echo "stage: $lib is not in libc6 $ver" >&2; exit 1; }
  mkdir -p "$root$(dirname "$lib")"
  install -m 0755 "$src" "$root$lib"
done
# glibc's own copyright travels with its files.
mkdir -p "$root/usr/share/doc/libc6" && cp "$libc/usr/share/doc/libc6/copyright" "$root/usr/share/doc/libc6/"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nbatchd:x:65532:65532:batchd:/var/lib/batchd:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nbatchd:x:65532:\n' >"$root/etc/group"
printf 'passwd: files\ngroup: files\n' >"$root/etc/nsswitch.conf"
cat >"$root/etc/batchd/batchd.toml" <<'TOML'
# The image's default: the model at /models/model.gguf, the API on :8000.
# A Kubernetes ConfigMap (deploy/helm/batchd) replaces this file.
[model]
path = "/models/model.gguf"
[server]
socket = "/run/batchd/batchd.sock"
http_listen = "0.0.0.0:8000"
# Requests without a key run as nobody (65534), as the chart's do: the
# container's network is the boundary. Mount a config with
# [server.api_keys] (and no anonymous_user) to require keys instead.
anonymous_user = "65534"
TOML
