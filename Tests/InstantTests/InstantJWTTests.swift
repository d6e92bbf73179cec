import Foundation
import InstantProtocol
import Testing

@testable import Instant

/// Offline JWT parsing: what a descriptor is keyed by, and `invalidJWT` for anything else.
@Suite struct InstantJWTTests {
    static func token(_ payload: String, header: String = #"{"alg":"RS256"}"#) -> String {
        func encode(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return "\(encode(header)).\(encode(payload)).c2lnbmF0dXJl"
    }

    @Test func readsTheDocumentLayerAndUser() throws {
        let jwt = try InstantJWT(
            parsing: Self.token(
                #"{"document_id":"contract 7/ü","layer":"review","user_id":"ana","permissions":["write"],"exp":1767225600}"#
            ))
        #expect(jwt.documentID == "contract 7/ü" && jwt.layerName == "review" && jwt.userID == "ana")
        #expect(jwt.expiration == Date(timeIntervalSince1970: 1_767_225_600))
        let plain = try InstantJWT(parsing: Self.token(#"{"document_id":"d"}"#))
        #expect(plain.layerName == "" && plain.userID == nil && plain.expiration == nil)
        // null is absent, as the server reads it (a backend may serialize a missing value so).
        let nulls = try InstantJWT(parsing: Self.token(#"{"document_id":"d","layer":null,"user_id":null}"#))
        #expect(nulls.layerName == "" && nulls.userID == nil)
        #expect(!String(describing: jwt).contains(jwt.token), "a description never shows the token")
    }

    @Test(arguments: [
        "", "a.b", "a.b.c.d", "..", "a..c",
        Self.token(#"{"layer":"x"}"#), Self.token(#"{"document_id":7}"#), Self.token(#"{"document_id":""}"#),
        Self.token(#"["document_id"]"#), Self.token("not json"),
        Self.token(#"{"document_id":"d","layer":5}"#), Self.token(#"{"document_id":"d","user_id":["a"]}"#),
        Self.token(#"{"document_id":"d","document_id":"e"}"#),
        "eyJhbGciOiJub25lIn0.%%%.sig", String(repeating: "a", count: 70_000) + ".b.c",
        // Copied with a line break, or a space inside: never sent in a header.
        Self.token(#"{"document_id":"d"}"#) + "\n", Self.token(#"{"document_id":"d"}"#) + "\r\n",
        " " + Self.token(#"{"document_id":"d"}"#),
        Self.token(#"{"document_id":"d"}"#).replacingOccurrences(of: ".", with: ". "),
    ])
    func anythingElseIsInvalidJWT(token: String) {
        #expect {
            try InstantJWT(parsing: token)
        } throws: { error in
            (error as? InstantError)?.code == .invalidJWT && !(error as? InstantError)!.message.isEmpty
        }
    }

    /// The payload's base64url is read by hand: every length, padded or not, and the
    /// standard alphabet's `+` and `/`, decode to what Foundation decodes.
    @Test func payloadsOfEveryLengthDecode() throws {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let standard = Data(bytes).base64EncodedString()
            let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            for text in [standard, url, url.replacingOccurrences(of: "=", with: "")] {
                #expect(InstantJWT.base64URLDecoded(Substring(text)) == bytes, "\(text)")
            }
        }
        for bad in ["a", "ab=c", "abc==", "ab===", "a b", "abé"] {
            #expect(InstantJWT.base64URLDecoded(Substring(bad)) == nil, "\(bad)")
        }
        let padded = Data(#"{"document_id":"d1","exp":1.5}"#.utf8).base64EncodedString()
        let jwt = try InstantJWT(parsing: "e30.\(padded).c2ln")
        #expect(jwt.documentID == "d1" && jwt.expiration == Date(timeIntervalSince1970: 1.5))
    }

    @Test func errorCodesAreInstants() {
        #expect(InstantError.Code.invalidJWT.rawValue == 32 && InstantError.Code.userIDMismatch.rawValue == 33)
        #expect(InstantError.Code.alreadyDownloaded.rawValue == 5 && InstantError.Code.requestFailed.rawValue == 16)
        #expect(InstantError.Code.invalidCustomData.rawValue == 113 && InstantError.Code.allCases.count == 28)
        let failure = InstantError(.databaseAccessFailed, "the layer database is locked", sqliteCode: 5)
        #expect(failure.description == "databaseAccessFailed (6): the layer database is locked (SQLite 5)")
    }
}

/// Every protocol error maps to an Instant error, and only authentication refusals are
/// authentication failures, only transient ones are retried.
@Suite struct InstantErrorMappingTests {
    @Test(arguments: ErrorCode.allCases)
    func everyServerCodeMaps(code: ErrorCode) {
        let error = InstantError(ProtocolError(code, "because"))
        #expect(error.message.contains(code.rawValue) && error.message.contains("because"))
        #expect(error.isAuthenticationFailure == [401, 403].contains(code.status))
        #expect(error.isRetryable == [500, 503].contains(code.status))
    }

    /// The server's `notFound` for a path it does not serve is a wrong server URL, retried;
    /// for a path it serves with another method, or any other `notFound`, it is not.
    @Test func noSuchRouteIsAWrongURL() {
        let route = InstantError(ProtocolError(.notFound, ProtocolError.noSuchRoute))
        #expect(route.code == .requestFailed && route.isRetryable && route.message.contains("prefix"))
        for message in ["no such route for this method", "no document \"d\""] {
            #expect(InstantError(ProtocolError(.notFound, message)).code == .invalidDocument, "\(message)")
        }
    }
}
