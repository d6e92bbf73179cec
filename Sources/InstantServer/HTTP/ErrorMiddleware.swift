import Foundation
import GRDB
import Hummingbird
import NIOCore
import NIOFoundationCompat
import InstantProtocol
import InstantStore
import Logging

/// Turns every error into a JSON error body with a stable code: ``ProtocolError`` as it is,
/// Hummingbird's 404 and 413 into `notFound` and `payloadLimitExceeded`, anything else
/// into `internal` (logged, with no internals in the response).
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = ServerContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            let failure = Self.protocolError(error)
            if error is CancellationError {
                // The client went away (a listener's connection closed): nobody to answer.
                context.logger.debug("request cancelled", metadata: ["path": "\(request.uri.path)"])
            } else if failure.code == .internal || failure == Self.storageFull {
                context.logger.error(
                    "request failed",
                    metadata: ["path": "\(request.uri.path)", "error": "\(String(reflecting: error))"])
            } else {
                context.logger.debug(
                    "request refused", metadata: ["code": "\(failure.code.rawValue)", "path": "\(request.uri.path)"])
            }
            return Self.response(failure)
        }
    }

    static func protocolError(_ error: any Error) -> ProtocolError {
        switch error {
        case let error as ProtocolError: return error
        case is NIOTooManyBytesError: return ProtocolError(.payloadLimitExceeded, "the body is too large")
        case is CancellationError: return ProtocolError(.serverBusy, "the request was cancelled")
        case let error as HTTPError where error.status == .notFound:
            return ProtocolError(.notFound, ProtocolError.noSuchRoute)
        case let error as HTTPError where error.status == .contentTooLarge:
            return ProtocolError(.payloadLimitExceeded, "the body is too large")
        case let error as HTTPError where error.status == .methodNotAllowed:
            return ProtocolError(.notFound, "no such route for this method")
        case let error as StoreError:
            switch error {
            case .hashMismatch, .sizeMismatch, .emptyPDF: return ProtocolError(.invalidRequest, error.description)
            case .diskFull: return storageFull
            default: return ProtocolError(.internal, "storage failed (\(error.code))")
            }
        // The server's own database (its layers and records) on a full disk.
        case let error as DatabaseError where error.resultCode == .SQLITE_FULL: return storageFull
        default: return ProtocolError(.internal, "the server failed; see its log")
        }
    }

    /// A full disk: a limit, as a client sees it (it comes back after a longer pause than
    /// for other limits: room is made by an operator); logged as an error for the operator.
    static let storageFull = ProtocolError(.serverBusy, "the server's storage is full: try again later")

    /// The `Retry-After` of ``storageFull``.
    static let storageFullRetryAfterSeconds = 60

    static func response(_ error: ProtocolError) -> Response {
        var response = JSONResponse.make(ErrorBody(error), status: .init(code: error.code.status))
        // At a limit: a client comes back after a pause, not at once.
        if error.code == .serverBusy {
            let seconds = error == storageFull ? storageFullRetryAfterSeconds : retryAfterSeconds
            response.headers[.retryAfter] = "\(seconds)"
        }
        return response
    }

    /// The `Retry-After` of a `503 serverBusy`.
    static let retryAfterSeconds = 5
}

extension ErrorBody {
    /// The error as one NDJSON line.
    var jsonLine: [UInt8] { Array(JSONResponse.encode(self)) + [UInt8(ascii: "\n")] }
}

/// JSON responses.
enum JSONResponse {
    /// A wire type, written by ``JSONWriter`` (canonical, and much faster than `JSONEncoder`).
    static func make(_ value: some JSONRepresentable, status: HTTPResponse.Status = .ok) -> Response {
        response(ByteBuffer(bytes: value.jsonBytes()), status: status)
    }

    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        response(ByteBuffer(bytes: encode(value)), status: status)
    }

    /// `value` as sorted-key JSON with ISO 8601 dates (an error body if it cannot be encoded).
    static func encode(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return (try? encoder.encode(value)) ?? Data(#"{"error":{"code":"internal","message":"encoding failed"}}"#.utf8)
    }

    private static func response(_ body: ByteBuffer, status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: body))
    }
}
