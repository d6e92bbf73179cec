/// Document identifiers, layer names, user and annotation ids are opaque strings: any
/// Unicode, `/`, `..`, NUL and the empty string are fine. They are stored as bytes and
/// never become part of a path. Only their length is bounded.
enum Identifier {
    /// The longest identifier accepted, in UTF-8 bytes.
    static let maximumLength = 1024

    static func validate(_ value: String, what: String, allowEmpty: Bool = true) throws(StoreError) {
        if !allowEmpty && value.isEmpty { throw .invalidIdentifier(reason: "the \(what) is empty") }
        let length = value.utf8.count
        if length > maximumLength {
            throw .invalidIdentifier(
                reason: "the \(what) is \(length) bytes long; at most \(maximumLength) bytes are accepted")
        }
    }
}
