import Foundation
import TestSupport
import Testing

@testable import InstantStore

/// A fresh store in a temporary directory.
struct Scratch {
    let root: URL
    let store: InstantStore
    static let tenant = try! TenantURL("https://a.example.com")
    static let other = try! TenantURL("https://b.example.com")

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("instant-tests-\(UUID().uuidString)")
        store = try InstantStore(root: root)
    }

    /// Closes the store and overwrites its catalog with garbage (its WAL and shared memory
    /// gone), as a disk error would: what a rebuild starts from.
    func destroyCatalog() throws {
        store.close()
        try Data(repeating: 0x55, count: 4096).write(to: URL(fileURLWithPath: store.layout.catalogPath))
        for suffix in ["-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: store.layout.catalogPath + suffix)
        }
    }

    /// Writes `bytes` to a file in the scratch directory.
    func file(_ bytes: Data, name: String = UUID().uuidString) throws -> URL {
        let url = root.appendingPathComponent("input-\(name).pdf")
        try bytes.write(to: url)
        return url
    }

    /// What `tmp/` holds besides this handle's spare layer locks (``SpareLayerLocks``: kept,
    /// still locked, for its next layers), which must each be held.
    func tempFiles() -> [String] {
        let spares = Set(store.spareLayerLocks.names)
        for name in spares {
            let acquired = try? POSIXFile.open(root.path + "/tmp/" + name, flags: O_RDONLY).lockExclusively(wait: false)
            #expect(acquired == false, "a spare lock is held by its store handle")
        }
        return files(in: "tmp").filter { !spares.contains($0) }
    }

    /// Regular files below a directory of the store, as relative paths.
    func files(in relativeDirectory: String) -> [String] {
        let base = root.appendingPathComponent(relativeDirectory).path
        let all = FileManager.default.enumerator(atPath: base)?.allObjects as? [String] ?? []
        return all.filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: base + "/" + path, isDirectory: &isDirectory)
                && !isDirectory.boolValue
        }
    }
}

/// PDF-like bytes that differ by seed and compress somewhat.
func samplePDF(seed: Int, size: Int = 50_000) -> Data {
    var data = Data("%PDF-1.7\n".utf8)
    var state = UInt64(seed) &+ 0x9E37_79B9_7F4A_7C15
    while data.count < size {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        data.append(contentsOf: "obj \(state % 1000) <</Type /Page>> endobj\n".utf8)
        withUnsafeBytes(of: state) { data.append(contentsOf: $0) }
    }
    return data.prefix(size)
}

func note(_ text: String) -> Data {
    Data(#"{"v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[0,0,10,10],"text":"\#(text)"}"#.utf8)
}

/// Runs the worker executable built with the tests and waits for it without holding a
/// thread: the suite's in-process servers share the two threads of Swift's cooperative
/// pool, and a test that blocked one (or both, with two workers) for a worker's whole run
/// froze every other test's server for as long (CI saw 30 s request deadlines pass).
/// Returns its exit status (or signal) and everything it wrote, output then errors.
@discardableResult
func runWorker(_ arguments: [String], failpoint: String? = nil, within limit: Duration = .seconds(600))
    async throws -> (status: Int32, signalled: Bool, output: String)
{
    var environment = ProcessInfo.processInfo.environment
    environment["INSTANT_FAILPOINT"] = failpoint
    let process = try ChildProcess(workerURL, arguments, environment: environment)
    let ending = try await process.exit(within: limit)
    return (ending.status, ending.signalled, process.standardOutput + process.standardError)
}

/// `instant-store-worker`, built with the tests.
let workerURL = Executables.url("instant-store-worker")

/// `body` on a thread of its own, awaited without holding a thread of Swift's cooperative
/// pool: blocking store calls (fsyncs, a failpoint's wait) run there, and the suite's
/// other tests (timers, in-process servers) need the pool's two threads meanwhile.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// Layer `d` (default name) holding one pending change, and a copy of its file under the
/// key `orphanKey` (a 32-character key, `digit` repeated): an orphan naming that layer,
/// holding the same change. Returns the stored layer's key and the orphan's.
func layerWithAnOrphanCopy(_ scratch: Scratch, digit: Character) throws -> (stored: String, orphan: String) {
    let stored = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
    try stored.create(id: "a", content: note("unsent"))
    let storedKey = stored.key
    stored.close()
    let orphanKey = String(repeating: digit, count: storedKey.count)
    try FileManager.default.copyItem(
        atPath: scratch.store.layout.layerPath(key: storedKey), toPath: scratch.store.layout.layerPath(key: orphanKey))
    return (storedKey, orphanKey)
}

/// A failpoint `point@scope` that holds whoever reaches it (`wait:`) until ``release()``;
/// ``end()`` takes the rule out.
///
/// ```swift
/// let pause = FailpointPause("gc.beforeOrphanQuarantine", at: key, in: scratch)
/// defer { pause.end() }
/// async let swept = onThread { try store.disposeOrphanLayer(key: key, mayDelete: true) }
/// try await pause.reached()
/// // … another process acts here …
/// pause.release()
/// ```
struct FailpointPause {
    private let signal: String
    private let rule: String

    init(_ point: String, at scope: String, in scratch: Scratch) {
        signal = scratch.root.appendingPathComponent("pause-\(UUID().uuidString)").path
        FileManager.default.createFile(atPath: signal, contents: nil)
        rule = "\(point)@\(scope)=wait:\(signal)"
        Failpoint.add(rule)
    }

    func reached() async throws {
        while !FileManager.default.fileExists(atPath: signal + ".reached") {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    func release() { try? FileManager.default.removeItem(atPath: signal) }

    func end() {
        release()
        Failpoint.remove(rule)
    }
}
