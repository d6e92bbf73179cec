#!/usr/bin/env bash
# Uploads one large PDF to a release instant-server, raw and then as multipart (each into a
# fresh server process), and prints the server's peak resident memory (VmHWM) after start
# and after the upload. The target: a 1 GiB upload stays under 64 MiB peak RSS.
#
#   swift build -c release --product instant-server && scripts/upload-rss.sh [MiB]   (default 1024)
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-1024}
binary=.build/release/instant-server
[ -x "$binary" ] || { echo "build it first: swift build -c release --product instant-server" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
pdf="$work/big.pdf"
printf '%%PDF-1.7\n' > "$pdf"
head -c $((mib << 20)) /dev/urandom >> "$pdf"

peak() { awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

run() {  # $1: raw | multipart
    local data="$work/data-$1" log="$work/server-$1.log"
    INSTANT_SERVER_DATA="$data" PORT=0 LOG_LEVEL=info MAX_UPLOAD_SIZE_BYTES=$(((mib + 64) << 20)) "$binary" --dev >"$log" 2>&1 &
    local pid=$!
    local port=""
    for _ in $(seq 1 100); do
        port=$(grep -o 'port=[0-9]*' "$log" | head -1 | cut -d= -f2 || true)
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || { cat "$log"; exit 1; }
    local token
    token=$(cat "$data/dev/api-token")
    local before
    before=$(peak "$pid")
    local started=$SECONDS
    if [ "$1" = raw ]; then
        curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Token token=\"$token\"" \
            -H 'Content-Type: application/pdf' -X POST -T "$pdf" \
            "http://127.0.0.1:$port/api/documents?document_id=raw" >"$work/status"
    else
        curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Token token=\"$token\"" \
            -F "file=@$pdf;type=application/pdf" -F document_id=multipart \
            "http://127.0.0.1:$port/api/documents" >"$work/status"
    fi
    printf '%-9s upload of %d MiB: HTTP %s in %ds; server peak RSS %s MiB after start, %s MiB after the upload\n' \
        "$1" "$mib" "$(cat "$work/status")" $((SECONDS - started)) "$before" "$(peak "$pid")"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}
run raw
run multipart
