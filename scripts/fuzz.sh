#!/usr/bin/env bash
# Builds the libFuzzer targets (swiftc -sanitize=fuzzer,address) and runs each for a
# bounded time. An input that crashes a target is kept in
# Tests/InstantServerTests/FuzzCrashers/<target>/, which FuzzRegressionTests replays
# (commit it with the fix).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 60; json range headers multipart claims)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(json range headers multipart claims)
out=.build-fuzz
mkdir -p "$out"
flags=(-sanitize=fuzzer,address -parse-as-library -O -g)

swiftc "${flags[@]}" -emit-library -static -module-name InstantProtocol \
    -emit-module -emit-module-path "$out/InstantProtocol.swiftmodule" \
    $(find Sources/InstantProtocol -name '*.swift') -o "$out/libInstantProtocol.a" || exit 1
server=(Sources/InstantServer/HTTP/ByteRange.swift Sources/InstantServer/HTTP/HeaderParsing.swift
    Sources/InstantServer/HTTP/MultipartParser.swift Sources/InstantServer/Storage/PageCursor.swift
    Sources/InstantServer/Auth/InstantClaims.swift Sources/InstantServer/Fuzzing/FuzzTargets.swift)

failed=()
for target in "${targets[@]}"; do
    flag=FUZZ_$(echo "$target" | tr a-z A-Z)
    binary="$out/fuzz-$target"
    swiftc "${flags[@]}" -D "$flag" -I "$out" -L "$out" -lInstantProtocol -module-name Fuzz \
        "${server[@]}" Fuzz/Entry.swift -o "$binary" 2> >(grep -v "ld.gold: warning" >&2) || exit 1
    corpus="$out/corpus/$target"
    crashers="Tests/InstantServerTests/FuzzCrashers/$target"
    mkdir -p "$corpus" "$crashers"
    seeds=()
    [ -d "Fuzz/Seeds/$target" ] && seeds=("Fuzz/Seeds/$target")
    echo "== $target: ${seconds}s"
    if ! "$binary" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$crashers/" -print_final_stats=1 "$corpus" "${seeds[@]}" 2>"$out/$target.log"; then
        failed+=("$target")
        tail -30 "$out/$target.log"
    fi
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$out/$target.log" | sed "s/^/   $target /"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "crashed: ${failed[*]} (inputs in Tests/InstantServerTests/FuzzCrashers/)"
    exit 1
fi
echo "no crash in ${targets[*]}"
