#!/bin/sh
# Create the batchd user and directories; tell systemd about the units.
# Starts nothing, and works where systemd is not running (containers, chroots).
set -e

if command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers /usr/lib/sysusers.d/batchd.conf
else
    getent group batchd >/dev/null || groupadd --system batchd
    getent passwd batchd >/dev/null || useradd --system --gid batchd --home-dir /var/lib/batchd \
        --shell /usr/sbin/nologin --comment "batchd inference daemon" batchd
fi

if command -v systemd-tmpfiles >/dev/null 2>&1; then
    systemd-tmpfiles --create /usr/lib/tmpfiles.d/batchd.conf || true
fi
mkdir -p /var/lib/batchd/models
chown batchd:batchd /var/lib/batchd /var/lib/batchd/models
chmod 0750 /var/lib/batchd
chgrp batchd /etc/batchd/batchd.toml
chmod 0640 /etc/batchd/batchd.toml

if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
exit 0
