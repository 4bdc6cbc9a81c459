#!/bin/sh
# On purge remove batchd's config, state and runtime files. The batchd user
# stays, as Debian policy asks: files it owned may remain elsewhere.
set -e
case "$1" in
    purge)
        rm -rf /etc/batchd /var/lib/batchd /run/batchd
        ;;
esac
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
exit 0
