import Foundation
import Testing

@testable import InstantProtocol

@Suite("JSON reader and writer")
struct JSONTests {
    func parse(_ text: String) throws(ProtocolError) -> JSONValue { try JSONValue.parse(Array(text.utf8)) }

    func failure(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            #expect(error.code == .invalidRequest)
            return error.message
        }
    }

    func canonical(_ value: JSONValue) -> String { String(decoding: value.jsonBytes(), as: UTF8.self) }

    @Test func readsEveryKindOfValue() throws {
        let value = try parse(
            #" { "n": null, "t": true, "f": false, "i": -42, "d": 2.5, "e": 1E3, "s": "a\"b\\c\/d\n\u00e9\ud83d\ude00", "a": [ ], "o": {} } "#
        )
        #expect(
            value
                == .object([
                    "n": .null, "t": .bool(true), "f": .bool(false), "i": .integer(-42), "d": .double(2.5),
                    "e": .double(1000), "s": .string("a\"b\\c/d\né😀"), "a": .array([]), "o": .object([:]),
                ]))
    }

    @Test func integersKeepTheirFullRangeAndLargerNumbersBecomeDoubles() throws {
        #expect(try parse("9223372036854775807") == .integer(.max))
        #expect(try parse("-9223372036854775808") == .integer(.min))
        #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try parse("-0") == .integer(0))
        #expect(try parse("0.1") == .double(0.1))
        #expect(failure("1e999")?.contains("out of range") == true)
    }

    @Test func refusesWhatIsNotJSONAndSaysWhere() {
        let cases: [(String, String)] = [
            ("", "ends where a value should be"), ("{", "expected a string key"), ("[1,]", "expected a value"),
            ("{\"a\":1,}", "expected a string key"), ("01", "must not start with 0"), ("1.", "after '.'"),
            ("1e", "exponent"), ("tru", "expected a value"), ("\"abc", "not closed"),
            ("\"a\tb\"", "control characters"), ("\"\\x\"", "unknown escape"), ("\"\\u12\"", "four hex digits"),
            ("\"\\ud83d\"", "surrogate"), ("\"\\ude00\"", "surrogate"), ("{\"a\":1,\"a\":2}", "appears twice"),
            ("[1] x", "after the JSON value"), ("// c\n1", "expected a value"), ("{\"a\" 1}", "expected ':'"),
            ("[1 2]", "expected ',' or ']'"), ("NaN", "expected a value"),
        ]
        for (text, expected) in cases {
            let message = failure(text)
            #expect(message?.contains(expected) == true, "\(text.debugDescription): \(message ?? "accepted")")
        }
        #expect(failure("[1, 2 3]")?.hasSuffix("(at byte 6)") == true)
    }

    @Test func refusesInvalidUTF8() throws {
        for bytes: [UInt8] in [
            [0x22, 0xFF, 0x22], [0x22, 0x5C, 0x6E, 0xC3, 0x22], [0x22, 0x61, 0x62, 0x80, 0x22],
            [0x7B, 0x22, 0x61, 0xC3, 0x22, 0x3A, 0x31, 0x7D],
        ] {
            #expect(throws: ProtocolError.self) { try JSONValue.parse(bytes) }
        }
        // ASCII, and valid UTF-8 after ASCII, are read as they are.
        #expect(try JSONValue.parse(Array(#"{"ab":"cd","é":"xé"}"#.utf8)) == .object(["ab": "cd", "é": "xé"]))
    }

    @Test func aDuplicateKeyIsFoundWhereverItIsAndNamedAtItsPlace() {
        #expect(failure(#"{"a":1,"b":2,"a":3}"#)?.hasSuffix("(at byte 13)") == true)
        #expect(failure(#"{"b":{"x":1,"x":1},"a":1}"#)?.contains(#"the key "x" appears twice"#) == true)
        #expect(failure(#"{"a":1,"a":{"b":1}}"#)?.contains(#"the key "a" appears twice"#) == true)
    }

    @Test func integersAreWrittenExactly() {
        for number: Int64 in [0, 7, -1, 10, -10, 1_000_000, .max, .min, .max - 1, .min + 1] {
            #expect(canonical(.integer(number)) == String(number))
        }
    }

    @Test func nestingIsLimitedInsteadOfOverflowingTheStack() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(failure(deep)?.contains("deeper than 512") == true)
        let allowed = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(throws: Never.self) { try parse(allowed) }
    }

    @Test func writesCanonicalText() {
        let value: JSONValue = .object([
            "b": .array([.integer(1), .double(2.5), .double(1e-7), .null, .bool(false)]),
            "a": .string("x/y \"q\" \\ \n\t\u{01} é"), "c": .object([:]), "d": .double(.nan),
        ])
        #expect(
            canonical(value)
                == #"{"a":"x/y \"q\" \\ \n\t\u0001 é","b":[1,2.5,1e-07,null,false],"c":{},"d":null}"#)
    }

    @Test func writingThenReadingGivesTheSameValue() throws {
        var generator = SystemRandomNumberGenerator()
        func random(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &generator) {
            case 0: .null
            case 1: .bool(Bool.random(using: &generator))
            case 2: .integer(Int64.random(in: .min ... .max, using: &generator))
            case 3: .double(Double.random(in: -1e300...1e300, using: &generator))
            case 4:
                .string(
                    String(
                        (0..<Int.random(in: 0..<12, using: &generator)).map { _ in
                            Character(Unicode.Scalar(UInt8.random(in: 0...127, using: &generator)))
                        }) + "é😀")
            case 5: .array((0..<Int.random(in: 0..<5, using: &generator)).map { _ in random(depth + 1) })
            default:
                .object(
                    Dictionary(
                        (0..<Int.random(in: 0..<5, using: &generator)).map { ("k\($0)\u{0}", random(depth + 1)) },
                        uniquingKeysWith: { first, _ in first }))
            }
        }
        for _ in 0..<500 {
            let value = random(0)
            #expect(try JSONValue.parse(value.jsonBytes()) == value)
            // Foundation reads the same text to the same value.
            #expect(try JSONDecoder().decode(JSONValue.self, from: value.jsonData()) == value)
        }
    }

    @Test func wireTypesReadBackWhatTheyWriteAndCodableAgrees() throws {
        let response = SyncResponse(
            epoch: "0f3c", revision: 7,
            results: [
                ChangeResult(changeId: 1, accepted: true),
                ChangeResult(changeId: 2, accepted: false, reason: .conflict, message: "changed"),
            ],
            changes: [
                ServerChange(
                    id: "a", revision: 7, deleted: false, content: .object(["v": .integer(2)]), createdBy: "u"),
                ServerChange(id: "b/..", revision: 6, deleted: true, content: nil),
            ])
        #expect(try SyncResponse(jsonData: response.jsonBytes()) == response)
        #expect(try JSONDecoder().decode(SyncResponse.self, from: Data(response.jsonBytes())) == response)
        #expect(try SyncResponse(jsonData: JSONEncoder().encode(response)) == response)
        #expect(
            String(decoding: ChangeResult(changeId: 1, accepted: true).jsonBytes(), as: UTF8.self)
                == #"{"accepted":true,"changeId":1}"#)
        let forked = LayerSnapshot(epoch: "e2", revision: 3, records: [], next: "n", forkEpoch: "ve1")
        #expect(try LayerSnapshot(jsonData: forked.jsonBytes()) == forked)
        #expect(try JSONDecoder().decode(LayerSnapshot.self, from: Data(forked.jsonBytes())) == forked)
        #expect(forked.continues("ve1") && forked.continues("e2") && !forked.continues("e1"))
        let plain = LayerSnapshot(epoch: "e2", revision: 3, records: [])
        #expect(!String(decoding: plain.jsonBytes(), as: UTF8.self).contains("forkEpoch"))
    }

    @Test func wireTypeErrorsNameTheField() throws {
        func message(_ text: String) -> String? {
            do {
                _ = try SyncRequest(jsonData: Array(text.utf8))
                return nil
            } catch { return error.message }
        }
        #expect(message("[]") == "the body must be a JSON object")
        #expect(message(#"{"baseRevision":0,"changes":[]}"#) == #""clientId" is missing"#)
        #expect(message(#"{"clientId":"c","changes":[]}"#) == #""baseRevision" is missing"#)
        #expect(
            message(#"{"clientId":"c","baseRevision":"1","changes":[]}"#) == #""baseRevision" must be a whole number"#)
        #expect(message(#"{"clientId":"c","epoch":7,"baseRevision":1,"changes":[]}"#)?.contains("epoch") == true)
        #expect(
            message(
                #"{"clientId":"c","baseRevision":1,"changes":[{"changeId":1,"kind":"create","id":"a"},{"changeId":2,"kind":"x","id":"b"}]}"#
            )
                == #""changes[1].kind" must be one of create, update, delete"#)
        #expect(
            message(#"{"clientId":"c","baseRevision":1,"changes":[7]}"#) == #""changes[0]" must be a JSON object"#)
        let request = SyncRequest(clientId: "c", epoch: "e", baseRevision: 3, changes: [])
        #expect(try SyncRequest(jsonData: request.jsonBytes()) == request)
    }

    /// An annotation nested as deep as every format can carry it passes; one level more is
    /// refused, however it was built.
    @Test func annotationContentNestsAtMostWhatAMessageCanCarry() throws {
        func annotation(depth: Int) -> JSONValue {
            var nested = JSONValue.array([])
            for _ in 0..<(depth - 2) { nested = .array([nested]) }
            return .object([
                "v": .integer(2), "type": .string("pspdfkit/note"), "pageIndex": .integer(0),
                "bbox": .array([.integer(0), .integer(0), .integer(1), .integer(1)]), "x": nested,
            ])
        }
        let deepest = annotation(depth: InstantJSON.maximumAnnotationDepth)
        try InstantJSON.validateAnnotation(deepest)
        // Inside the deepest envelope any format puts it in (five levels: the export of
        // pending changes), it is read back.
        var message = deepest
        for _ in 0..<5 { message = .array([message]) }
        #expect(try JSONValue.parse(message.jsonBytes()) == message)
        #expect(throws: ProtocolError.self) {
            try InstantJSON.validateAnnotation(annotation(depth: InstantJSON.maximumAnnotationDepth + 1))
        }
        // Built in code deeper than any reader allows: refused.
        #expect(throws: ProtocolError.self) { try InstantJSON.validateAnnotation(annotation(depth: 2_000)) }
    }

    /// An annotation holds at most ``InstantJSON/maximumAnnotationValues`` values (every
    /// value counts, the annotation itself too): a server parses a stored one again at each
    /// read, so one without a bound could take gigabytes of memory there.
    @Test func annotationContentHoldsAtMostItsValues() throws {
        func annotation(values: Int) -> JSONValue {
            // The annotation, its five members and bbox's four numbers are 10 values; then the points.
            .object([
                "v": .integer(2), "type": .string("pspdfkit/ink"), "pageIndex": .integer(0),
                "bbox": .array([.integer(0), .integer(0), .integer(1), .integer(1)]),
                "points": .array(Array(repeating: .integer(1), count: values - 10)),
            ])
        }
        try InstantJSON.validateAnnotation(annotation(values: InstantJSON.maximumAnnotationValues))
        let refused = #expect(throws: ProtocolError.self) {
            try InstantJSON.validateAnnotation(annotation(values: InstantJSON.maximumAnnotationValues + 1))
        }
        #expect(refused?.code == .invalidAnnotation)
        #expect(refused?.message.contains("split it") == true, "\(String(describing: refused))")
    }
}
