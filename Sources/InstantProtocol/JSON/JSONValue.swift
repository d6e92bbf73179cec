import Foundation

/// Any JSON value, kept as it came: an annotation's Instant JSON content passes through
/// client and server with every key, known or not.
///
/// ```swift
/// let content = try JSONDecoder().decode(JSONValue.self, from: Data(#"{"v":2,"x":[1,2.5]}"#.utf8))
/// content["v"]  // .integer(2)
/// ```
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The member `key` of an object; nil for a missing key or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The value as a number, if it is one.
    public var number: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// The value as a string, if it is one.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// Canonical JSON text (sorted keys, no whitespace): what the server stores. See
    /// ``JSONWriter``.
    public func jsonData() -> Data {
        Data(jsonBytes())
    }

    /// Parses one JSON document from UTF-8 bytes, strictly (see ``JSONReader``); the error
    /// (`invalidRequest`) says what is wrong and at which byte.
    public static func parse(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> JSONValue {
        let parsed = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(ProtocolError) in try JSONReader.parse(buffer) }
        }
        if let parsed { return try parsed.get() }
        return try Array(bytes).withUnsafeBufferPointer { buffer throws(ProtocolError) in
            try JSONReader.parse(buffer)
        }
    }
}

extension JSONValue: JSONRepresentable {
    public init(json: JSONValue) { self = json }
    public var json: JSONValue { self }
}
