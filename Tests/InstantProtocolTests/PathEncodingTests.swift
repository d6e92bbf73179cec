import InstantProtocol
import Testing

@Suite struct PathEncodingTests {
    @Test func onlyUnreservedASCIIStaysAsItIs() {
        #expect(PathEncoding.encode("Az09-._~") == "Az09-._~")
        #expect(PathEncoding.encode("a/b é?%\u{0}") == "a%2Fb%20%C3%A9%3F%25%00")
        #expect(PathEncoding.encode("") == "")
    }

    /// A segment that is all dots would be resolved away by a URL library or a proxy.
    @Test func dotSegmentsAreEncoded() {
        #expect(PathEncoding.encode(".") == "%2E")
        #expect(PathEncoding.encode("..") == "%2E%2E")
        #expect(PathEncoding.encode("...") == "...")
        #expect(PathEncoding.encode("a..b") == "a..b")
    }
}
