import Foundation
import InstantProtocol
import Testing
import ServerTestSupport

/// A real `instant-server` killed (SIGKILL) at each step of an upload and of a document
/// deletion, then started again: the document is whole or absent, never half there, and no
/// PDF is left behind that nothing can reach.
@Suite struct UploadCrashTests {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-crash-\(UUID().uuidString)")
    let pdf = samplePDF(200_000, seed: 11)

    @Test(arguments: [
        ("upload.afterIngest", false), ("upload.afterInsert", true), ("upload.afterAttach", true),
    ])
    func anUploadKilledAtEachStep(failpoint: String, kept: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: data) }
        let dying = try await ServerProcess.start(data: data, failpoint: failpoint)
        _ = try? await dying.call(.POST, "/api/documents?document_id=x", body: pdf)
        #expect(try await dying.process.exit(within: .seconds(20)).signalled, "killed at \(failpoint)")
        await dying.stop()

        let server = try await ServerProcess.start(data: data)
        #expect(try await server.api(.GET, "/documents/x").status == (kept ? 200 : 404), "after \(failpoint)")
        #expect(storedPDFs(data) == (kept ? 1 : 0), "no PDF without a document, none missing for one")
        if kept {
            let token = try await server.token(document: "x", permissions: "download")
            #expect(try await server.call(.GET, "/i/v1/documents/x/pdf", token: token).body == pdf)
        } else {
            #expect(try await server.call(.POST, "/api/documents?document_id=x", body: pdf).status == 201)
        }
        await server.stop()
    }

    /// A disk that fills during an upload (the PDF's temp file cannot be written): 503
    /// `serverBusy`, as for any limit a client waits out (the operator sees the error in
    /// the log), nothing kept, and the same upload succeeds once there is room.
    @Test func anUploadOnAFullDiskIsRefusedForNowAndKeepsNothing() async throws {
        defer { try? FileManager.default.removeItem(at: data) }
        let full = try await ServerProcess.start(data: data, failpoint: "file.write@.blob=enospc")
        let refused = try await full.call(.POST, "/api/documents?document_id=x", body: pdf)
        let body = String(decoding: refused.body, as: UTF8.self)
        #expect(refused.status == 503 && body.contains("serverBusy") && body.contains("storage is full"), "\(body)")
        await full.stop()
        #expect(storedPDFs(data) == 0)
        let server = try await ServerProcess.start(data: data)
        #expect(try await server.call(.POST, "/api/documents?document_id=x", body: pdf).status == 201)
        await server.stop()
    }

    @Test func aDeletionKilledAfterItsRowIsFinishedByDeletingAgain() async throws {
        defer { try? FileManager.default.removeItem(at: data) }
        let first = try await ServerProcess.start(data: data)
        #expect(try await first.call(.POST, "/api/documents?document_id=x", body: pdf).status == 201)
        await first.stop()

        let dying = try await ServerProcess.start(data: data, failpoint: "delete.afterRow")
        _ = try? await dying.api(.DELETE, "/documents/x")
        #expect(try await dying.process.exit(within: .seconds(20)).signalled)
        await dying.stop()

        let server = try await ServerProcess.start(data: data)
        #expect(server.process.standardError.contains("the PDF store holds a document the database does not know"))
        #expect(try await server.api(.GET, "/documents/x").status == 404)
        #expect(storedPDFs(data) == 1, "kept until an operator decides")
        #expect(try await server.api(.DELETE, "/documents/x").status == 204)
        #expect(storedPDFs(data) == 0)
        await server.stop()
    }
}
