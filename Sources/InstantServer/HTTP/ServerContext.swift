import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat
import InstantProtocol
import Logging

/// The request context: Hummingbird's core storage, plus the JSON body limit.
public struct ServerContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var maxUploadSize: Int
    /// The request's connection: whether the peer is still there (Hummingbird does not
    /// cancel a handler whose peer hung up).
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        maxUploadSize = 32 << 20
        channel = source.channel
    }
}

extension Request {
    /// The percent-decoded path parameter `name`: identifiers may hold `/`, `..`, NUL or
    /// any Unicode, sent percent-encoded.
    func identifier(_ name: String, context: ServerContext) throws(ProtocolError) -> String {
        guard let raw = context.parameters.get(name) else {
            throw ProtocolError(.invalidRequest, "the path has no \(name)")
        }
        guard let decoded = Self.percentDecoded(raw) else {
            throw ProtocolError(.invalidRequest, "the \(name) in the path is not valid percent-encoded UTF-8")
        }
        guard decoded.utf8.count <= 1024 else {
            throw ProtocolError(.invalidRequest, "the \(name) is longer than 1,024 bytes")
        }
        return decoded
    }

    /// Strict percent-decoding: every `%` starts two hex digits, and the bytes are UTF-8.
    static func percentDecoded(_ text: some StringProtocol) -> String? { HeaderParsing.percentDecoded(text) }

    /// The body read as the wire type `T`, at most `limit` bytes; errors say what is wrong
    /// and where (`"changes[2].kind" must be one of create, update, delete`). Once it has
    /// arrived, the body is counted in the server's ``BodyBudget`` (by the route's
    /// ``BodyBudget/counting(_:)``) before it is decoded: `serverBusy` when there is no room.
    func decodeJSON<T: JSONRepresentable>(_ type: T.Type, limit: Int) async throws -> T {
        let body = try await collectBody(limit: limit)
        try BodyBudget.current?.count(body.readableBytes)
        return try T(jsonData: body.readableBytesView)
    }

    private func collectBody(limit: Int) async throws -> ByteBuffer {
        do {
            return try await body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw ProtocolError(.payloadLimitExceeded, "the body is larger than \(limit) bytes")
        }
    }
}
