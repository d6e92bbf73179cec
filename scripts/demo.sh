#!/usr/bin/env bash
# The main job until instantctl exists: a tour of the store on a temporary root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh
swift run -c release store-demo "$@"
