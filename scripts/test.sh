#!/usr/bin/env bash
# The test command: installs what is missing, builds everything (the tests drive the
# worker executable), and runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh
swift build --build-tests
swift build --product generate-manual  # the man page test regenerates man/ with it
swift test --skip-build
