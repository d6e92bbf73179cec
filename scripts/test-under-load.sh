#!/usr/bin/env bash
# The test suite under disk and CPU load, as on a slow CI machine: a loop writes 512 MiB
# with fsync over and over, and a `yes` takes a core, while the suite runs (the 1 GiB
# download aside). What a stall on one test does to the others shows here first: a test
# that holds a thread of the cooperative pool while the disk is slow freezes every
# in-process server. Build first (scripts/test.sh, or swift build --build-tests and
# swift build --product generate-manual). Usage: scripts/test-under-load.sh [LOG]
set -euo pipefail
cd "$(dirname "$0")/.."
log="${1:-/tmp/test-under-load.log}"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/instant-load.XXXXXX")"
# In a process group of its own, so that the loop and its dd stop together.
setsid bash -c 'while true; do dd if=/dev/zero of="$1/load" bs=1M count=512 conv=fsync 2>/dev/null; rm -f "$1/load"; done' \
    load "$scratch" &
disk=$!
yes > /dev/null &
cpu=$!
trap 'kill -- -$disk 2>/dev/null || true; kill $cpu 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$scratch"' EXIT
start=$SECONDS
status=0
# The tests' scratch directories go into the scratch directory too, removed at exit.
mkdir "$scratch/tmp"
TMPDIR="$scratch/tmp" swift test --skip-build --skip LargeDownloadTests > "$log" 2>&1 || status=$?
echo "exit $status after $((SECONDS - start)) s; issues:"
grep "recorded an issue" "$log" | cut -c1-240 || true
exit $status
