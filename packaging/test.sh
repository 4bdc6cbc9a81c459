#!/usr/bin/env bash
# Package test, run as root: install, upgrade (the config stays), remove and
# purge the .deb on this machine, verify the units, and check the .rpm's
# file list. Prints "N passed, M failed" last.
set -uo pipefail
pkgdir=${1:-build/pkg}
model=${2:-build/pkgtest.gguf} # any model batchd loads; make package-test writes a tiny one
deb=$(ls "$pkgdir"/batchd_*.deb)
rpm=$(ls "$pkgdir"/batchd-*.rpm)
pass=0 fail=0
check() { # description, command...
    local what=$1; shift
    if "$@" >/tmp/batchd-pkgtest.out 2>&1; then
        pass=$((pass + 1)); echo "ok   $what"
    else
        fail=$((fail + 1)); echo "FAIL $what"; sed 's/^/     /' /tmp/batchd-pkgtest.out | head -20
    fi
}
[ "$(id -u)" = 0 ] || { echo "package test needs root"; exit 1; }
dpkg -P batchd >/dev/null 2>&1 || true

files=(/usr/bin/batchd /usr/bin/batchctl /usr/lib/systemd/system/batchd.service /usr/lib/systemd/system/batchd.socket
    /usr/lib/systemd/system/batchd-http.socket /usr/lib/sysusers.d/batchd.conf /usr/lib/tmpfiles.d/batchd.conf /etc/batchd/batchd.toml
    /usr/share/doc/batchd/README.md /usr/share/doc/batchd/PROTOCOL.md /usr/share/batchd/grafana/batchd.json
    /usr/share/doc/batchd/examples/batchd-warm.service /usr/share/doc/batchd/examples/batchd-warm.timer)

check "dpkg installs the .deb" dpkg -i "$deb"
for f in "${files[@]}"; do check "installed $f" test -e "$f"; done
check "models directory" test -d /var/lib/batchd/models
check "batchd user and group" bash -c 'getent passwd batchd && getent group batchd'
check "state directory owned by batchd" bash -c '[ "$(stat -c %U:%G /var/lib/batchd)" = batchd:batchd ]'
check "config readable by the batchd group only" bash -c '[ "$(stat -c %a:%G /etc/batchd/batchd.toml)" = 640:batchd ]'
check "batchd runs" /usr/bin/batchd version
check "systemd-analyze verify" systemd-analyze verify /usr/lib/systemd/system/batchd.service /usr/lib/systemd/system/batchd.socket /usr/lib/systemd/system/batchd-http.socket
exposure=$(systemd-analyze security --offline=true /usr/lib/systemd/system/batchd.service 2>&1 |
    awk '/Overall exposure level/ { print $(NF-2) }')
echo "     exposure: ${exposure:-unknown}"
check "exposure <= 2.5" awk -v e="$exposure" 'BEGIN { exit !(e != "" && e + 0 <= 2.5) }'
# Not pgrep -x batchd: any other batchd on the machine (a developer's, a
# test's) would fail it. Nothing may run as the installed user, and the
# installed units must not be active where systemd runs.
check "nothing was started" bash -c '! pgrep -u batchd && ! { command -v systemctl && systemctl is-active --quiet batchd.service batchd.socket batchd-http.socket; }'

# Shipped binaries: stripped, batchctl static, and the .deb declares what
# batchd links (libc, for NVML's dlopen through cgo).
check "binaries stripped of debug info" bash -c '! readelf -S /usr/bin/batchd /usr/bin/batchctl | grep -qE "\.debug_|\.symtab"'
check "batchctl is static" bash -c '! readelf -d /usr/bin/batchctl 2>/dev/null | grep -q NEEDED'
check "Depends covers batchd's libraries" bash -c '
    for lib in $(readelf -d /usr/bin/batchd | sed -n "s/.*Shared library: \[\(.*\)\]/\1/p"); do
        case $lib in libc.so.6|libdl.so.2|libpthread.so.0|libm.so.6|libresolv.so.2) ;; *) echo "unexpected $lib"; exit 1;; esac
    done
    need=$(objdump -T /usr/bin/batchd | grep -o "GLIBC_[0-9.]*" | sed s/GLIBC_// | sort -V | tail -1)
    dep=$(dpkg-query -W -f="\${Depends}" batchd)
    echo "needs glibc $need; Depends: $dep"
    [[ "$dep" == *"libc6 (>= $need)"* ]]'

# The installed service starts as the batchd user, with the shipped config,
# and serves a request on the installed socket path (as systemd would run
# it: tmpfiles first, then ExecStart as User=batchd; setpriv execs, so the
# pid is batchd's own and SIGTERM reaches it).
serve_check() {
    install -o batchd -g batchd -m 0644 "$model" /var/lib/batchd/models/model.gguf
    systemd-tmpfiles --create /usr/lib/tmpfiles.d/batchd.conf 2>/dev/null || install -d -o batchd -g batchd /run/batchd
    setpriv --reuid=batchd --regid=batchd --init-groups -- /usr/bin/batchd serve --config /etc/batchd/batchd.toml >/tmp/batchd-pkgtest.log 2>&1 &
    local pid=$! ok=1
    for _ in $(seq 200); do
        /usr/bin/batchctl --socket /run/batchd/batchd.sock health >/dev/null 2>&1 && { ok=0; break; }
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    if [ $ok = 0 ]; then
        out=$(/usr/bin/batchctl generate 'Once upon a time' --max-tokens 4 --json --socket /run/batchd/batchd.sock) || ok=1
        echo "$out"
        [[ "$out" == *'"finish_reason"'* ]] || ok=1
        [ "$(stat -c %U:%G:%a /run/batchd/batchd.sock)" = batchd:batchd:660 ] || { echo "socket $(stat -c %U:%G:%a /run/batchd/batchd.sock)"; ok=1; }
        # The HTTP API on the packaged http_socket. Greedy: the OpenAI default
        # (temperature 1) samples, and the random-weight model may draw its EOS
        # before 4 tokens, so either ending counts as served.
        out=$(curl -sS --unix-socket /run/batchd/http.sock http://batchd/v1/completions \
            -d '{"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0}') || ok=1
        echo "$out"
        [[ "$out" == *'"finish_reason":"length"'* || "$out" == *'"finish_reason":"stop"'* ]] || ok=1
        [ "$(stat -c %U:%G:%a /run/batchd/http.sock)" = batchd:batchd:660 ] || { echo "http socket $(stat -c %U:%G:%a /run/batchd/http.sock)"; ok=1; }
    fi
    kill -TERM $pid 2>/dev/null
    wait $pid || { echo "batchd exited $?"; ok=1; }
    [ -e /run/batchd/batchd.sock ] && { echo "socket left behind"; ok=1; }
    [ -e /run/batchd/http.sock ] && { echo "http socket left behind"; ok=1; }
    [ $ok = 0 ] || cat /tmp/batchd-pkgtest.log
    rm -f /var/lib/batchd/models/model.gguf
    return $ok
}
if [ -f "$model" ]; then
    check "the installed service serves a request as the batchd user" serve_check
else
    fail=$((fail + 1)); echo "FAIL no model at $model to serve (make package-test writes one)"
fi

echo 'log_level = "debug"  # local edit' >> /etc/batchd/batchd.toml
check "upgrade (reinstall) keeps the edited config" bash -c "dpkg -i --force-confold '$deb' && grep -q 'local edit' /etc/batchd/batchd.toml"
check "dpkg removes" dpkg -r batchd
check "binaries gone after remove" bash -c '! test -e /usr/bin/batchd && ! test -e /usr/lib/systemd/system/batchd.service'
check "config kept after remove" test -e /etc/batchd/batchd.toml
check "dpkg purges" dpkg -P batchd
check "config and state gone after purge" bash -c '! test -e /etc/batchd && ! test -e /var/lib/batchd'
check "no package left" bash -c '! dpkg -s batchd'

if command -v rpm >/dev/null 2>&1; then
    expect=$(printf '%s\n' "${files[@]}" /var/lib/batchd/models | sort)
    check "rpm file list" bash -c "diff <(rpm -qlp '$rpm' 2>/dev/null | sort) <(echo '$expect')"
    check "rpm marks the config noreplace" bash -c "rpm -qcp '$rpm' 2>/dev/null | grep -qx /etc/batchd/batchd.toml"
else
    fail=$((fail + 1)); echo "FAIL rpm tool missing: cannot check the .rpm (apt-get install rpm)"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
