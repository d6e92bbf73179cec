#!/usr/bin/env bash
# Regenerates the man pages (man/) with swift-argument-parser's generate-manual plugin and
# the shell completions (completions/) from the built instantctl. Commit the results;
# the test suite fails when they are stale.
#
#   scripts/generate-docs.sh [--date YYYY-MM-DD]   (default: the date in man/instantctl.1)
set -euo pipefail
cd "$(dirname "$0")/.."
date=""
if [[ "${1:-}" == "--date" ]]; then date="$2"; fi
if [[ -z "$date" && -f man/instantctl.1 ]]; then
    date=$(sed -n 's/^\.Dd \(.*\)$/\1/p' man/instantctl.1 | head -1)
    date=$(date -d "$date" +%Y-%m-%d)
fi
date=${date:-$(date +%Y-%m-%d)}
mkdir -p man completions
swift package --allow-writing-to-package-directory generate-manual \
    --configuration debug --date "$date" --output-directory man
binary=$(swift build --show-bin-path)/instantctl
"$binary" --generate-completion-script bash > completions/instantctl.bash
"$binary" --generate-completion-script zsh > completions/_instantctl
"$binary" --generate-completion-script fish > completions/instantctl.fish
echo "man/ and completions/ regenerated (date $date)"
