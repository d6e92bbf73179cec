import Testing

@testable import InstantServer

/// `If-None-Match` as the PDF route reads it: a comma-separated list of tags, quoted or
/// not, weak or strong, with spaces and tabs around them, or `*`.
@Suite struct IfNoneMatchTests {
    let etag = "\"0123abcd\""

    @Test func aListNamesTheTagAnywhereInIt() {
        #expect(HeaderParsing.matches("\"0123abcd\"", etag: etag))
        #expect(HeaderParsing.matches("\"ffff\",\"0123abcd\"", etag: etag))
        #expect(HeaderParsing.matches("\"ffff\" ,\t \"0123abcd\" \t", etag: etag))
        #expect(HeaderParsing.matches("\"0123abcd\", \"ffff\"", etag: etag))
        #expect(HeaderParsing.matches(",,\"0123abcd\",", etag: etag))
    }

    @Test func weakTagsAndStarAndUnquotedTagsMatch() {
        #expect(HeaderParsing.matches("W/\"0123abcd\"", etag: etag))
        #expect(HeaderParsing.matches("*", etag: etag))
        #expect(HeaderParsing.matches(" * ", etag: etag))
        #expect(HeaderParsing.matches("\"ffff\", 0123abcd", etag: etag))
        #expect(HeaderParsing.matches("0123abcd", etag: "0123abcd"))
    }

    @Test func nearMissesDoNotMatch() {
        for header in [
            "", ",", " ", "\"0123abc\"", "\"0123abcd", "0123abcd\"", "\"0123abcdx\"", "\"0123ABCD\"", "W/",
            "w/\"0123abcd\"", "**", "\"*\"", "\"\"0123abcd\"\"", "\"0123\nabcd\"", "\"0123abcd\"\"",
        ] {
            #expect(!HeaderParsing.matches(header, etag: etag), "\(header)")
        }
        // An unquoted etag is never matched by its quoted form, nor by a prefix.
        #expect(!HeaderParsing.matches("\"0123abcd\"", etag: "0123abcd"))
        #expect(!HeaderParsing.matches("", etag: "\"\""))
    }

    @Test func nonASCIIBytesAreComparedAsTheyAre() {
        #expect(!HeaderParsing.matches("\"0123abcd\u{00A0}\"", etag: etag))
        #expect(HeaderParsing.matches("\"ä\"", etag: "\"ä\""))
        #expect(!HeaderParsing.matches("\u{00A0}\"0123abcd\"", etag: etag), "only spaces and tabs are trimmed")
    }
}
