import InstantProtocol
import Testing

@Suite struct PathEncodingTests {
    @Test func onlyUnreservedASCIIStaysAsItIs() {
        #expect(PathEncoding.encode("Az09-._~") == "Az09-._~")
        #expect(PathEncoding.encode("a/b é?%\u{0}") == "a%2Fb%20%C3%A9%3F%25%00")
        #expect(PathEncoding.encode("") == "")
    }
}
