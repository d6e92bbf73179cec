import Foundation
import Instant
import InstantStore
import TestSupport
import Testing

/// What one run of the built `instantctl` did.
struct Run {
    var status: Int32
    var output: String
    var error: String

    /// The standard output as JSON.
    func json() throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(output.utf8))
        return try #require(value as? [String: Any], "not a JSON object: \(output)")
    }
}

/// Runs `instantctl ARGUMENTS --root ROOT` (with `input` on its standard input) and waits for it.
func instantctl(
    _ arguments: [String], root: URL?, environment extra: [String: String] = [:], input: String? = nil
) async throws -> Run {
    var environment = ProcessInfo.processInfo.environment
    environment["NO_COLOR"] = nil
    environment.merge(extra) { _, new in new }
    let process = try ChildProcess(
        Executables.url("instantctl"), arguments + (root.map { ["--root", $0.path] } ?? []), environment: environment,
        input: input.map { Data($0.utf8) })
    let ending = try await process.exit(within: .seconds(120))
    #expect(!ending.signalled, "instantctl \(arguments) crashed: \(process.standardError)")
    return Run(status: ending.status, output: process.standardOutput, error: process.standardError)
}

/// Runs `instantctl ARGUMENTS --root ROOT` with its standard output on `/dev/full`, where
/// every write fails as on a full disk (`Run.output` is then empty).
func instantctlToFullDisk(_ arguments: [String], root: URL) async throws -> Run {
    let process = try ChildProcess(
        URL(fileURLWithPath: "/bin/sh"),
        ["-c", #"exec "$0" "$@" > /dev/full"#, Executables.url("instantctl").path] + arguments + ["--root", root.path])
    let ending = try await process.exit(within: .seconds(60))
    #expect(!ending.signalled, "instantctl \(arguments) crashed: \(process.standardError)")
    return Run(status: ending.status, output: process.standardOutput, error: process.standardError)
}

/// A demo store in a fresh temporary directory, removed after `body`.
func withDemoStore<T>(_ body: (URL, InstantStore) async throws -> T) async throws -> T {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("instantctl-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try DemoStore.seed(at: root)
    return try await body(root, store)
}

let acme = try! TenantURL(DemoStore.acme)
let globex = try! TenantURL(DemoStore.globex)

/// Flips a byte in the middle of `document`'s stored PDF (acme's), as a disk error would.
func flipByteInPDF(of document: String, root: URL, store: InstantStore) throws {
    let pdf = try #require(try store.pdf(tenant: acme, document: document))
    let blob = root.appendingPathComponent("blobs/sha256/\(pdf.sha256.hex.prefix(2))/\(pdf.sha256.hex)")
    var bytes = try Data(contentsOf: blob)
    bytes[bytes.count / 2] ^= 0xFF
    try bytes.write(to: blob)
}

/// Every file under `root` holds none of `secret`'s bytes.
func expectNoFile(under root: URL, contains secret: String) throws {
    let files =
        FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?.allObjects as? [URL] ?? []
    #expect(!files.isEmpty)
    for file in files where (try? file.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
        let bytes = try Data(contentsOf: file)
        #expect(bytes.range(of: Data(secret.utf8)) == nil, "the JWT is in \(file.path)")
    }
}
