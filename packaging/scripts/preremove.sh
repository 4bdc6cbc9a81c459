#!/bin/sh
# Stop the service on removal (not on upgrade), where systemd runs.
set -e
case "$1" in
    remove|purge|0)
        if [ -d /run/systemd/system ]; then
            systemctl stop batchd.service batchd.socket batchd-http.socket >/dev/null 2>&1 || true
            systemctl --no-reload disable batchd.service batchd.socket batchd-http.socket >/dev/null 2>&1 || true
        fi
        ;;
esac
exit 0
