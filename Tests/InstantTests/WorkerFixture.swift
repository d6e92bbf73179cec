import Foundation
import Instant
import InstantProtocol
import InstantServer
import InstantStore
import ServerTestSupport
import TestSupport
import Testing

/// A store root, a document "doc" with a layer "L" on the test server, and the worker.
struct WorkerFixture {
    let server: TestServer
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("instant-worker-\(UUID())")
    let jwt: String

    init(server: TestServer, document: String = "doc", upload: Bool = true) async throws {
        self.server = server
        if upload { try await server.upload(document, samplePDF()) }
        jwt = try await server.token(document: document, layer: "L", user: "ana")
    }

    func removeRoot() { try? FileManager.default.removeItem(at: root) }

    struct Run {
        var ending: ChildProcess.Ending
        var output: String
        var error: String
    }

    /// Starts the worker without waiting for it.
    func start(_ command: String, _ arguments: String..., failpoint: String? = nil) throws -> ChildProcess {
        try start(command, arguments, failpoint: failpoint)
    }

    func start(_ command: String, _ arguments: [String], failpoint: String? = nil) throws -> ChildProcess {
        var environment = ProcessInfo.processInfo.environment
        environment["INSTANT_JWT"] = jwt
        environment["INSTANT_FAILPOINT"] = failpoint
        return try ChildProcess(
            Executables.url("instant-client-worker"), [command, root.path, server.base] + arguments,
            environment: environment)
    }

    /// Runs the worker to its end.
    func run(_ command: String, _ arguments: String..., failpoint: String? = nil, within limit: Duration = .seconds(60))
        async throws -> Run
    {
        let child = try start(command, arguments, failpoint: failpoint)
        let ending = try await child.exit(within: limit)
        return Run(ending: ending, output: child.standardOutput, error: child.standardError)
    }

    func expectOK(_ command: String, _ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let child = try start(command, arguments)
        let ending = try await child.exit(within: .seconds(60))
        let run = Run(ending: ending, output: child.standardOutput, error: child.standardError)
        #expect(
            run.ending.status == 0 && run.output.contains("ok"), "\(command): \(run.error)",
            sourceLocation: sourceLocation)
    }

    /// The server holds exactly `ids`, `updated` carries the update, and its revision
    /// counts exactly the batches expected: the server gives each batch it applies one
    /// new revision, so a batch applied twice would add one (a replay adds none).
    func expectServer(
        holds ids: [String], updated: String, revision: Int64, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let list = try await server.api(.GET, "/documents/doc/layers/L/annotations").json(AnnotationList.self)
        #expect(list.data.annotations.map(\.id).sorted() == ids, sourceLocation: sourceLocation)
        let record = list.data.annotations.first { $0.id == updated }
        #expect(record?.content["text"] == .string("updated"), sourceLocation: sourceLocation)
        let probe = try await server.sync(
            "doc", token: jwt, SyncRequest(clientId: "probe-\(UUID())", epoch: nil, baseRevision: 0, changes: []))
        #expect(probe.revision == revision, "batches applied by the server", sourceLocation: sourceLocation)
    }

    /// The local layer holds exactly `ids`, nothing pending, and the store verifies clean
    /// (deep) once repair has swept a dead process's leftovers.
    func expectLocal(holds ids: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let store = try InstantStore(root: root)
        defer { store.close() }
        let layer = try store.openLayer(tenant: TenantURL(server.base), document: "doc", layer: "L")
        defer { layer.close() }
        #expect(try layer.pendingChangeCount() == 0, sourceLocation: sourceLocation)
        #expect(try layer.annotations().map(\.id) == ids, sourceLocation: sourceLocation)
        _ = try store.verify(VerifyOptions(repair: true))
        let report = try store.verify(VerifyOptions(deep: true))
        #expect(report.isClean, "\(report.remaining)", sourceLocation: sourceLocation)
    }
}

extension WorkerFixture {
    /// Runs the worker, which must fail (the operation, not the process: no "ok"), and
    /// returns what it printed.
    @discardableResult
    func expectFailure(_ command: String, failpoint: String, sourceLocation: SourceLocation = #_sourceLocation)
        async throws -> Run
    {
        let failed = try await run(command, failpoint: failpoint)
        #expect(
            failed.ending.status != 0 && !failed.output.contains("ok"), "\(failed.output)",
            sourceLocation: sourceLocation)
        return failed
    }

    /// The layer "L" of the document is stored, and the store deep-verifies clean.
    func expectLayerStored(document: String = "doc", sourceLocation: SourceLocation = #_sourceLocation) throws {
        let store = try InstantStore(root: root)
        defer { store.close() }
        let tenant = try TenantURL(server.base)
        #expect(
            try store.localDescriptor(tenant: tenant, document: document, layer: "L") != nil,
            sourceLocation: sourceLocation)
        let report = try store.verify(VerifyOptions(deep: true))
        #expect(report.isClean, "\(report.remaining)", sourceLocation: sourceLocation)
    }

    /// The store deep-verifies clean.
    func expectStoreClean(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let store = try InstantStore(root: root)
        defer { store.close() }
        let report = try store.verify(VerifyOptions(deep: true))
        #expect(report.isClean, "\(report.remaining)", sourceLocation: sourceLocation)
    }

    /// Runs `instantctl prune` on the root with a budget no layer fits (it removes every
    /// clean layer, and whatever no layer uses), and expects it to succeed.
    func prune(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let prune = try ChildProcess(
            Executables.url("instantctl"), ["prune", "--root", root.path, "--max-size", "1B", "--json"])
        let ending = try await prune.exit(within: .seconds(60))
        #expect(ending.status == 0, "\(prune.standardError)", sourceLocation: sourceLocation)
    }
}

/// Where a worker waits at a failpoint (`wait:` action) until the test lets it go on.
///
/// ```swift
/// let hold = try Hold()
/// defer { hold.remove() }
/// let worker = try fixture.start("download", failpoint: hold.failpoint("download.afterPDF"))
/// try await hold.waitUntilReached()
/// // … act while the worker waits …
/// try hold.release()
/// ```
struct Hold {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("hold-\(UUID())").path

    /// A hold that does not exist holds nothing: the worker would run on unseen.
    init() throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }

    /// The failpoint rule that holds a worker at `name`.
    func failpoint(_ name: String) -> String { "\(name)=wait:\(path)" }

    /// Whether a worker got there.
    var reached: Bool { FileManager.default.fileExists(atPath: path + ".reached") }

    /// Waits (a minute at most) until a worker is there.
    func waitUntilReached(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !reached && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try #require(reached, "the worker did not reach the failpoint", sourceLocation: sourceLocation)
    }

    /// Lets the worker go on.
    func release() throws { try FileManager.default.removeItem(atPath: path) }

    func remove() {
        for file in [path, path + ".reached"] { try? FileManager.default.removeItem(atPath: file) }
    }
}
