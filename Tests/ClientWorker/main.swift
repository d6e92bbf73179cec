// A child process for the client's crash and concurrency tests: it runs one client
// operation so a test can kill it at a failpoint (INSTANT_FAILPOINT) and look at what it
// left, or run several side by side on one store. The JWT comes in INSTANT_JWT. Prints
// "ok" when the operation returned. Not installed; not for users.
//
//   instant-client-worker download ROOT SERVER
//   instant-client-worker add ROOT SERVER PREFIX COUNT       (offline: PREFIX-0 …, then an update of PREFIX-0)
//   instant-client-worker sync ROOT SERVER                   (one cycle; prints lost=N)
//   instant-client-worker sync-loop ROOT SERVER PREFIX COUNT (add one, sync, COUNT times)
//   instant-client-worker sync-unread ROOT SERVER            (one cycle beside an events()
//       stream nobody reads; prints lost=N and synced, then waits to be killed)
//   instant-client-worker download-removing-document ROOT SERVER HOLD [behind]
//       (with INSTANT_FAILPOINT=…=wait:HOLD: removes the document when the download
//       reaches the failpoint, then lets it go on; with "behind", starts the removal and
//       lets the download go on while the removal waits for the catalog's write lock;
//       prints download=ok or its error code)
import Foundation
import Instant
import InstantProtocol

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 3, let server = URL(string: arguments[2]) else {
    fail("usage: instant-client-worker COMMAND ROOT SERVER [ARGS…]")
}
guard let jwt = ProcessInfo.processInfo.environment["INSTANT_JWT"] else { fail("INSTANT_JWT is not set") }
let command = arguments[0]
let rest = Array(arguments.dropFirst(3))
func argument(_ index: Int) -> String {
    guard index < rest.count else { fail("\(command): missing argument \(index + 1)") }
    return rest[index]
}

func note(_ text: String, id: String) -> JSONValue {
    [
        "v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [1, 2, 30, 40], "text": .string(text),
        "id": .string(id),
    ]
}

/// What `body` threw, as an `InstantError` (a `catch` with a pattern in async code crashes
/// the Swift 6.3 compiler).
func failure(_ body: () async throws -> Void) async -> InstantError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? InstantError ?? InstantError(.unknown, "\(error)")
    }
}

/// The process's peak resident set (VmHWM in /proc/self/status), in KiB.
func peakResidentKiB() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
}

/// Counts the changes reported lost and the sync cycles that ended, as they are reported.
actor LostCounter {
    private(set) var count = 0
    private(set) var cyclesEnded = 0
    func add() { count += 1 }
    func cycleEnded() { cyclesEnded += 1 }

    /// Waits (up to 10 s) until `cycles` cycles have ended: their lost changes are
    /// reported before the end of each.
    func waitForCycles(_ cycles: Int) async {
        for _ in 0..<500 where cyclesEnded < cycles { try? await Task.sleep(for: .milliseconds(20)) }
    }
}

do {
    let client = try InstantClient(serverURL: server, storeRoot: URL(fileURLWithPath: arguments[1]))
    client.retryPolicy = RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(400))
    let descriptor = try client.documentDescriptor(forJWT: jwt)
    descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
    let lost = LostCounter()
    let events = client.events()
    let watcher = Task {
        for await event in events {
            switch event {
            case .didLoseChange(_, let change):
                await lost.add()
                let winner = change.winner?["text"]?.string ?? "none"
                FileHandle.standardError.write(
                    Data("lost \(change.annotationID): \(change.reason) winner=\(winner)\n".utf8))
            case .didFinishSync, .didFailSync, .didFailAuthentication: await lost.cycleEnded()
            default: break
            }
        }
    }
    FileHandle.standardOutput.write(Data("started\n".utf8))  // unbuffered: a test waits for it
    var cycles = 0
    switch command {
    case "download":
        try await descriptor.download(usingJWT: jwt).result()
        print("pdf-bytes=\(descriptor.lastDownload?.pdfBytesTransferred ?? -1)")
        print("peak-rss-kib=\(peakResidentKiB())")
    case "add":
        let document = descriptor.editableDocument
        let count = Int(argument(1)) ?? 0
        for index in 0..<count {
            _ = try document.add(note("\(argument(0)) \(index)", id: "\(argument(0))-\(index)"))
        }
        if count > 0 { try document.update("\(argument(0))-0", content: note("updated", id: "\(argument(0))-0")) }
    case "sync":
        cycles += 1
        try await descriptor.sync().result()
    case "sync-loop":
        // Meant to run beside another loop and a pruning instantctl: a layer pruned while
        // clean is downloaded again; a sync that finds it pruned has nothing left to send
        // (the other loop sent our change: prune never removes a layer with one pending).
        for index in 0..<(Int(argument(1)) ?? 0) {
            let id = "\(argument(0))-\(index)"
            while true {
                let added = await failure {
                    _ = try descriptor.editableDocument.add(note("\(argument(0)) \(index)", id: id))
                }
                guard let added else { break }
                guard added.code == .invalidDocument else { throw added }
                let downloaded = await failure { try await descriptor.download(usingJWT: jwt).result() }
                if let downloaded, downloaded.code != .alreadyDownloaded { throw downloaded }
                print("downloaded again")
            }
            cycles += 1
            if let synced = await failure({ try await descriptor.sync().result() }) {
                guard synced.code == .invalidDocument else { throw synced }
                print("pruned after \(id)")
            } else {
                print("synced \(id)")
            }
        }
    case "sync-unread":
        // The lost changes' reports stay in the layer until every stream has taken them:
        // this one never does, so a kill now leaves them to the next sync.
        let unread = client.events()
        cycles += 1
        if let failed = await failure({ try await descriptor.sync().result() }) { throw failed }
        await lost.waitForCycles(cycles)
        FileHandle.standardOutput.write(Data("lost=\(await lost.count)\nsynced\n".utf8))
        while true {
            try await Task.sleep(for: .seconds(60))
            withExtendedLifetime(unread) {}
        }
    case "download-removing-document":
        let hold = argument(0)
        let download = try descriptor.download(usingJWT: jwt)
        for _ in 0..<3000 where !FileManager.default.fileExists(atPath: hold + ".reached") {
            try await Task.sleep(for: .milliseconds(20))
        }
        if rest.count > 1 && argument(1) == "behind" {
            // The download holds the write lock: the removal waits for it on its own thread.
            let identifier = descriptor.identifier
            let removal = Task.detached { try client.removeLocalStorage(forDocumentIdentifier: identifier) }
            try await Task.sleep(for: .milliseconds(200))
            try FileManager.default.removeItem(atPath: hold)
            try await removal.value
        } else {
            try client.removeLocalStorage(forDocumentIdentifier: descriptor.identifier)
            try FileManager.default.removeItem(atPath: hold)
        }
        let failed = await failure { try await download.result() }
        print("download=\(failed.map { "\($0.code)" } ?? "ok")")
    default:
        fail("unknown command \(command)")
    }
    // Events are delivered asynchronously: count once every cycle's end has come.
    await lost.waitForCycles(cycles)
    watcher.cancel()
    print("lost=\(await lost.count)")
    print("ok")
    withExtendedLifetime(client) {}
} catch {
    fail("\(command): \(error)")
}
