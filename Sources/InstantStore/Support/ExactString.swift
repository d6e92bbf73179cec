/// A string compared byte for byte (its UTF-8): how the store and the server tell
/// identifiers apart. Swift's `String` calls two canonically equivalent spellings equal
/// (`"caf\u{E9}"` and `"cafe\u{301}"`), which are two documents, layers or annotations
/// here; a set or a dictionary of identifiers keys them with this type.
///
/// ```swift
/// let pending = try layer.pendingAnnotationIDs()
/// let isSynced = !pending.contains(ExactString(annotation.id))
/// ```
///
/// Ordered by its bytes, as SQLite orders the identifiers it stores.
public struct ExactString: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The string itself.
    public let string: String

    public init(_ string: String) { self.string = string }

    public static func == (lhs: ExactString, rhs: ExactString) -> Bool {
        var (left, right) = (lhs.string, rhs.string)
        return left.withUTF8 { left in right.withUTF8 { right in left.elementsEqual(right) } }
    }

    public static func < (lhs: ExactString, rhs: ExactString) -> Bool {
        var (left, right) = (lhs.string, rhs.string)
        return left.withUTF8 { left in right.withUTF8 { right in left.lexicographicallyPrecedes(right) } }
    }

    /// Every byte counts (`Data`'s own hash, for one, reads only the first 80), then an end
    /// mark (0xFF, never a byte of UTF-8), so that a pair hashes apart from the same bytes
    /// split elsewhere (`("ab", "c")` and `("a", "bc")`).
    public func hash(into hasher: inout Hasher) {
        var string = self.string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(0xFF as UInt8)
    }

    public var description: String { string }
}

extension ExactString: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(value) }
}

extension String {
    /// Whether the two are the same bytes, as the store and the server compare identifiers
    /// (`==` also calls canonically equivalent spellings equal): see ``ExactString``.
    ///
    /// ```swift
    /// guard claims.documentID.hasSameBytes(as: document) else { throw … }
    /// ```
    public func hasSameBytes(as other: String) -> Bool { ExactString(self) == ExactString(other) }
}

extension Optional<String> {
    /// Whether both are nil, or both the same bytes (see ``ExactString``).
    public func hasSameBytes(as other: String?) -> Bool {
        switch (self, other) {
        case (nil, nil): true
        case (let left?, let right?): left.hasSameBytes(as: right)
        default: false
        }
    }
}
