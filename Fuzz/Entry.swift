// The libFuzzer entry point of one target, chosen at build time (`-D FUZZ_JSON`, …);
// built and run by scripts/fuzz.sh.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    #if FUZZ_JSON
        FuzzTargets.json(bytes)
    #elseif FUZZ_RANGE
        FuzzTargets.range(bytes)
    #elseif FUZZ_HEADERS
        FuzzTargets.headers(bytes)
    #elseif FUZZ_MULTIPART
        FuzzTargets.multipart(bytes)
    #elseif FUZZ_CLAIMS
        FuzzTargets.claims(bytes)
    #endif
    return 0
}
