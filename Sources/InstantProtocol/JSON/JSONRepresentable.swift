import Foundation

/// A wire type that maps straight to and from a ``JSONValue``.
///
/// The protocol's messages go through ``JSONReader`` and ``JSONWriter`` rather than
/// `JSONDecoder`/`JSONEncoder`, which are several times slower on Instant JSON content.
/// `Codable` still works and goes through the same mapping, so there is one definition of
/// each message's keys.
///
/// ```swift
/// let request = try SyncRequest(jsonData: body)   // errors name the field: "changes[2].kind …"
/// let bytes = response.jsonBytes()                // canonical JSON
/// ```
public protocol JSONRepresentable: Codable {
    /// Reads the value; the error says which field is missing or has the wrong type.
    init(json: JSONValue) throws(ProtocolError)
    /// The value as JSON. Optional fields that are nil are left out.
    var json: JSONValue { get }
}

extension JSONRepresentable {
    /// Parses JSON text (UTF-8) and reads the value from it.
    public init(jsonData data: some Collection<UInt8>) throws(ProtocolError) {
        try self.init(json: JSONValue.parse(data))
    }

    /// Canonical JSON text: sorted keys, no whitespace.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter()
        writer.write(json)
        return writer.bytes
    }

    public init(from decoder: any Decoder) throws {
        try self.init(json: JSONValue(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}

/// The members of a JSON object being read into a wire type, with errors that give the
/// path of the field: `"changes[3].kind" must be one of create, update, delete`.
struct JSONFields {
    private let members: [String: JSONValue]
    private let path: String

    init(_ value: JSONValue, path: String = "") throws(ProtocolError) {
        guard case .object(let members) = value else {
            throw ProtocolError(.invalidRequest, "\(path.isEmpty ? "the body" : "\"\(path)\"") must be a JSON object")
        }
        self.members = members
        self.path = path
    }

    /// The member `key`; nil when it is missing or `null`.
    func value(_ key: String) -> JSONValue? {
        guard let member = members[key], member != .null else { return nil }
        return member
    }

    func required<T>(_ key: String, _ type: JSONField<T>) throws(ProtocolError) -> T {
        guard let member = value(key) else { throw ProtocolError(.invalidRequest, "\"\(name(key))\" is missing") }
        return try convert(member, key, type)
    }

    func optional<T>(_ key: String, _ type: JSONField<T>) throws(ProtocolError) -> T? {
        guard let member = value(key) else { return nil }
        return try convert(member, key, type)
    }

    /// The array `key`, each element read by `element` with its own path (`key[i]`).
    func array<T>(_ key: String, _ element: (JSONValue, String) throws(ProtocolError) -> T) throws(ProtocolError)
        -> [T]
    {
        let elements = try required(key, .array)
        var result: [T] = []
        result.reserveCapacity(elements.count)
        for (position, member) in elements.enumerated() {
            result.append(try element(member, "\(name(key))[\(position)]"))
        }
        return result
    }

    private func convert<T>(_ member: JSONValue, _ key: String, _ type: JSONField<T>) throws(ProtocolError) -> T {
        guard let converted = type.convert(member) else {
            throw ProtocolError(.invalidRequest, "\"\(name(key))\" must be \(type.expected)")
        }
        return converted
    }

    private func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
}

/// How to read one field, and what to say when it is something else.
struct JSONField<T>: Sendable {
    let expected: String
    let convert: @Sendable (JSONValue) -> T?
}

extension JSONField where T == Int64 {
    static var integer: JSONField {
        JSONField(expected: "a whole number") {
            if case .integer(let value) = $0 { value } else { nil }
        }
    }
}

extension JSONField where T == String {
    static var string: JSONField { JSONField(expected: "a string") { $0.string } }
}

extension JSONField where T == Bool {
    static var bool: JSONField {
        JSONField(expected: "true or false") {
            if case .bool(let value) = $0 { value } else { nil }
        }
    }
}

extension JSONField where T == [JSONValue] {
    static var array: JSONField {
        JSONField(expected: "an array") {
            if case .array(let value) = $0 { value } else { nil }
        }
    }
}

extension JSONField where T == JSONValue {
    static var any: JSONField { JSONField(expected: "a JSON value") { $0 } }
}

extension JSONField where T: RawRepresentable & CaseIterable, T.RawValue == String {
    /// One of the enum's raw values.
    static func oneOf(_ type: T.Type) -> JSONField {
        JSONField(expected: "one of \(T.allCases.map(\.rawValue).joined(separator: ", "))") {
            $0.string.flatMap(T.init(rawValue:))
        }
    }
}

extension JSONValue {
    /// An object of the members that are not nil: how wire types leave out optional fields.
    static func object(omittingNil members: KeyValuePairs<String, JSONValue?>) -> JSONValue {
        var object: [String: JSONValue] = [:]
        object.reserveCapacity(members.count)
        for (key, value) in members {
            if let value { object[key] = value }
        }
        return .object(object)
    }
}
