/// Writes a ``JSONValue`` as canonical JSON text: object keys sorted, no whitespace, `/`
/// unescaped, non-ASCII text as UTF-8, integers as integers and doubles in Swift's
/// shortest form that reads back to the same value.
///
/// The same value always gives the same bytes, which is what the server stores and what
/// lets two records be compared as text.
///
/// ```swift
/// var writer = JSONWriter()
/// writer.write(.object(["b": .integer(1), "a": .string("x/y")]))
/// String(decoding: writer.bytes, as: UTF8.self)  // {"a":"x/y","b":1}
/// ```
///
/// Long documents can be written a piece at a time, taking ``bytes`` out as they grow:
///
/// ```swift
/// writer.append("[")
/// for (index, row) in rows.enumerated() {
///     if index > 0 { writer.append(",") }
///     writer.writeObject(["id": .integer(row.id), "name": .string(row.name)])  // keys in order
///     if writer.bytes.count > 65_536 { send(writer.takeBytes()) }
/// }
/// writer.append("]")
/// ```
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    /// Returns the bytes written so far and starts again from empty, keeping the capacity.
    public mutating func takeBytes() -> [UInt8] {
        let taken = bytes
        bytes.removeAll(keepingCapacity: true)
        return taken
    }

    /// Appends JSON punctuation or other text that is already valid JSON as it stands.
    public mutating func append(_ literal: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends an object whose members are written in the order given: no dictionary to
    /// build and no keys to sort, for the rows of a long listing. Give the keys in
    /// ascending order to keep the output canonical (checked in debug builds).
    public mutating func writeObject(_ members: KeyValuePairs<String, JSONValue>) {
        assert(zip(members.dropFirst(), members).allSatisfy { $0.key > $1.key }, "keys out of order")
        bytes.append(UInt8(ascii: "{"))
        for (position, member) in members.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            write(member.key)
            bytes.append(UInt8(ascii: ":"))
            write(member.value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Appends `value`. Doubles that are not finite have no JSON form and are written as
    /// `null` (no parser produces them).
    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .integer(let number): writeInteger(number)
        case .double(let number):
            if number.isFinite { bytes.append(contentsOf: number.description.utf8) } else { append("null") }
        case .string(let text): write(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            // The members sorted, not the keys: no lookup back into the dictionary.
            for (position, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                write(member.key)
                bytes.append(UInt8(ascii: ":"))
                write(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `number` in decimal, without making a `String` of it.
    mutating func writeInteger(_ number: Int64) {
        var magnitude = number.magnitude
        // 20 digits hold UInt64.max; filled from the end.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var first = digits.count
            repeat {
                first -= 1
                digits[first] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if number < 0 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[first...]))
        }
    }

    /// Appends `text` as a JSON string: `"` and `\` escaped, control characters as `\n`,
    /// `\t`… or `\u00XX`, everything else as it is.
    public mutating func write(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var clean = 0
            for (position, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean..<position]))
                clean = position + 1
                switch byte {
                case 0x22: append(#"\""#)
                case 0x5C: append(#"\\"#)
                case 0x0A: append(#"\n"#)
                case 0x0D: append(#"\r"#)
                case 0x09: append(#"\t"#)
                case 0x08: append(#"\b"#)
                case 0x0C: append(#"\f"#)
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    append(#"\u00"#)
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0xF)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

}
