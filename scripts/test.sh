#!/usr/bin/env bash
# The test command: installs what is missing, builds everything (the tests drive the
# worker executable), and runs the whole suite, then the 1 GiB download on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh
# Every scratch store, server data directory and child's file of this run goes under one
# directory (FileManager's temporaryDirectory and mktemp honour TMPDIR), removed at exit.
TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/instant-test-run.XXXXXX")"
export TMPDIR
trap 'rm -rf "$TMPDIR" || true' EXIT  # set -e applies in the trap: a leftover must not fail a run
swift build --build-tests
swift build --product generate-manual  # the man page test regenerates man/ with it
swift test --skip-build
# Alone, after the rest: a 1 GiB download's peak RSS, which would load the parallel suite.
INSTANT_LARGE_PDF_MIB=1024 INSTANT_LARGE_LAYER_ANNOTATIONS=50000 swift test --skip-build --filter LargeDownloadTests
