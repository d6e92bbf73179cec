#!/usr/bin/env bash
# Installs the system libraries the package links against, when they are missing:
# libsqlite3-dev (GRDB over the system SQLite) and libzstd-dev (CZstd); man-db, for the
# test that renders the man page with `man -l`; python3-prometheus-client, whose parser
# checks `instantctl metrics` output. Debian/Ubuntu.
set -euo pipefail
missing=()
for package in libsqlite3-dev libzstd-dev pkg-config man-db python3-prometheus-client; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "Installing ${missing[*]}…" >&2
    sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
