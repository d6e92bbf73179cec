/// A strict RFC 8259 parser from UTF-8 bytes to ``JSONValue``, used on every hot path of the
/// protocol instead of `JSONDecoder`.
///
/// `JSONDecoder` cannot ask a value its type, so decoding a ``JSONValue`` through `Codable`
/// tries each type in turn and builds a `DecodingError` for every miss; a 10,000-change
/// sync spent most of its time there. This reader looks at the next byte instead.
///
/// It refuses what `JSONDecoder` refuses (trailing commas, comments, leading zeros, bare
/// control characters, invalid UTF-8, unpaired surrogates) and, in addition, duplicate
/// keys in an object and nesting deeper than ``maximumDepth``: a document that means two
/// things to two parsers is not accepted.
///
/// ```swift
/// let value = try JSONReader.parse(Array(#"{"v":2,"bbox":[1,2.5,3,4]}"#.utf8))
/// value["bbox"]  // .array([.integer(1), .double(2.5), .integer(3), .integer(4)])
/// ```
struct JSONReader {
    /// Arrays and objects nest at most this deep (JSONDecoder's limit too).
    static let maximumDepth = 512

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Parses one JSON document, surrounded by nothing but whitespace.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(ProtocolError) -> JSONValue {
        var reader = JSONReader(bytes)
        reader.skipWhitespace()
        let value = try reader.value()
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw reader.failure("unexpected text after the JSON value") }
        return value
    }

    // MARK: Values

    private mutating func value() throws(ProtocolError) -> JSONValue {
        guard index < bytes.count else { throw failure("the JSON ends where a value should be") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("expected a value")
        }
    }

    private mutating func object() throws(ProtocolError) -> JSONValue {
        try enter()
        index += 1
        // Members are collected first, so the dictionary is made once at its size.
        var pairs: [(key: String, value: JSONValue, start: Int)] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object([:])
        }
        while true {
            guard peek() == UInt8(ascii: "\"") else { throw failure("expected a string key in an object") }
            let start = index
            let key = try string()
            skipWhitespace()
            try expect(UInt8(ascii: ":"), "expected ':' after an object key")
            skipWhitespace()
            pairs.append((key, try value(), start))
            skipWhitespace()
            if peek() == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
                continue
            }
            try expect(UInt8(ascii: "}"), "expected ',' or '}' in an object")
            depth -= 1
            var members = [String: JSONValue](minimumCapacity: pairs.count)
            for pair in pairs where members.updateValue(pair.value, forKey: pair.key) != nil {
                index = pair.start
                throw failure("the key \"\(pair.key)\" appears twice in one object")
            }
            return .object(members)
        }
    }

    private mutating func array() throws(ProtocolError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            elements.append(try value())
            skipWhitespace()
            if peek() == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
                continue
            }
            try expect(UInt8(ascii: "]"), "expected ',' or ']' in an array")
            depth -= 1
            return .array(elements)
        }
    }

    private mutating func enter() throws(ProtocolError) {
        depth += 1
        guard depth <= Self.maximumDepth else {
            throw failure("arrays and objects nest deeper than \(Self.maximumDepth) levels")
        }
    }

    private mutating func literal(_ word: StaticString) throws(ProtocolError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count,
            UnsafeBufferPointer(start: word.utf8Start, count: count).elementsEqual(bytes[index..<index + count])
        else { throw failure("expected a value") }
        index += count
    }

    // MARK: Numbers

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`: an integer when it has neither a
    /// fraction nor an exponent and fits 64 bits, a double otherwise.
    private mutating func number() throws(ProtocolError) -> JSONValue {
        let start = index
        let negative = peek() == UInt8(ascii: "-")
        if negative { index += 1 }
        guard let first = peek(), isDigit(first) else { throw failure("expected a digit") }
        index += 1
        if first == UInt8(ascii: "0"), let next = peek(), isDigit(next) {
            throw failure("numbers must not start with 0")
        }
        while let byte = peek(), isDigit(byte) { index += 1 }
        var integral = true
        if peek() == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard let byte = peek(), isDigit(byte) else { throw failure("expected a digit after '.'") }
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            integral = false
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard let byte = peek(), isDigit(byte) else { throw failure("expected a digit in the exponent") }
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
        if integral, let value = integer(bytes[(negative ? start + 1 : start)..<index], negative: negative) {
            return .integer(value)
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            index = start
            throw failure("the number \(text) is out of range")
        }
        return .double(value)
    }

    private func integer(_ digits: Slice<UnsafeBufferPointer<UInt8>>, negative: Bool) -> Int64? {
        var value: Int64 = 0
        for digit in digits {
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = shifted.subtractingReportingOverflow(Int64(digit &- UInt8(ascii: "0")))
            guard !overflow, !overflow2 else { return nil }
            value = next  // accumulated negatively so that Int64.min fits
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    // MARK: Strings

    /// A string starting at the opening quote; fast when it has no escapes.
    private mutating func string() throws(ProtocolError) -> String {
        index += 1
        let start = index
        // ORed bytes: ASCII text (most keys and values) needs no UTF-8 validation.
        var high: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            high |= byte
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if high < 0x80 { return String(decoding: slice, as: UTF8.self) }
                guard let text = String(validating: slice, as: UTF8.self) else {
                    index = start
                    throw failure("a string is not valid UTF-8")
                }
                return text
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            guard byte >= 0x20 else { throw failure("control characters in strings must be escaped") }
            index += 1
        }
        throw failure("a string is not closed")
    }

    private mutating func escapedString(from start: Int) throws(ProtocolError) -> String {
        var utf8 = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw failure("a string is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard let escape = peek() else { break }
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): utf8.append(contentsOf: String(try unicodeEscape()).utf8)
                default:
                    index -= 2
                    throw failure("unknown escape in a string")
                }
            case 0..<0x20:
                throw failure("control characters in strings must be escaped")
            default:
                utf8.append(byte)
                index += 1
            }
        }
        throw failure("a string is not closed")
    }

    /// The scalar of `XXXX` (after `\u`), joining a surrogate pair.
    private mutating func unicodeEscape() throws(ProtocolError) -> Character {
        let high = try hex4()
        var scalar: UInt32 = high
        if (0xD800..<0xDC00).contains(high) {
            guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw failure("a \\u escape is half of a surrogate pair") }
            index += 2
            let low = try hex4()
            guard (0xDC00..<0xE000).contains(low) else { throw failure("a \\u escape is half of a surrogate pair") }
            scalar = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw failure("a \\u escape is half of a surrogate pair") }
        return Character(unicode)
    }

    private mutating func hex4() throws(ProtocolError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw failure("a \\u escape needs four hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a \\u escape needs four hex digits")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    // MARK: Bytes

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8, _ message: String) throws(ProtocolError) {
        guard peek() == byte else { throw failure(message) }
        index += 1
    }

    private func failure(_ message: String) -> ProtocolError {
        ProtocolError(.invalidRequest, "not valid JSON: \(message) (at byte \(index))")
    }
}
