import GRDB
import InstantProtocol
import InstantStore
import Testing

@testable import InstantServer

/// A full disk is a limit a client waits out (503 `serverBusy`, `Retry-After` 60), whether
/// the server's PDF store or its own database meets it; other failures stay `internal`.
@Suite struct StorageFullTests {
    @Test func aFullDiskIsALimitWhicheverDatabaseMeetsIt() {
        let full: [any Error] = [StoreError.diskFull(path: "pdfs/tmp/x.blob"), DatabaseError(resultCode: .SQLITE_FULL)]
        for error in full {
            let mapped = ErrorMiddleware.protocolError(error)
            #expect(mapped.code == .serverBusy && mapped.message.contains("storage is full"), "\(mapped)")
            #expect(mapped == ErrorMiddleware.storageFull, "logged as an error for the operator")
            let response = ErrorMiddleware.response(mapped)
            #expect(response.status.code == 503 && response.headers[.retryAfter] == "60")
        }
        let other = DatabaseError(resultCode: .SQLITE_CORRUPT)
        let mappedOther = ErrorMiddleware.protocolError(other)
        #expect(mappedOther.code == .internal && mappedOther != ErrorMiddleware.storageFull)
        let busy = ErrorMiddleware.response(ProtocolError(.serverBusy, "too many listeners"))
        #expect(busy.headers[.retryAfter] == "\(ErrorMiddleware.retryAfterSeconds)")
    }
}
