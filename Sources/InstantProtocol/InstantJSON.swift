/// The rules an annotation's Instant JSON content must meet before a server stores it.
///
/// Only the fields every annotation has are checked (`v`, `type`, `pageIndex`, `bbox`);
/// anything else is kept as it came.
///
/// ```swift
/// try InstantJSON.validateAnnotation(content)  // throws ProtocolError(.invalidAnnotation, …)
/// ```
public enum InstantJSON {
    /// The `format` of an Instant JSON document.
    public static let format = "https://pspdfkit.com/instant-json/v1"

    /// How deep an annotation's arrays and objects may nest (the annotation object itself
    /// counts as 1). A reader refuses a document nested deeper than 512, and every format
    /// that carries content wraps it: three levels in a sync and a snapshot page (the
    /// message, the list, the record), four in the backend's annotation list, five in the
    /// export of pending changes (`instantctl rm --export`). Content any deeper could be
    /// stored, but never sent or read back again, and would stop its layer from syncing.
    public static let maximumAnnotationDepth = 507

    /// How many values (objects, arrays, strings, numbers, booleans and nulls, the
    /// annotation itself included) a new annotation may hold: an ink drawing of some 60,000
    /// points (each an `[x, y]` and an intensity). A server parses a stored annotation again
    /// for every read of it (a snapshot, a page of changes), at some 90 bytes of memory per
    /// value: without a bound, one stored annotation of a payload's size would take
    /// gigabytes at each read. Checked where an annotation is written (a server's routes,
    /// the client's edits, instantctl); content a server already holds is read as it is.
    public static let maximumAnnotationValues = 250_000

    /// Checks `content` is an annotation object with a version, a type, a page index and a
    /// bounding box, nested at most ``maximumAnnotationDepth`` deep; the error says which
    /// rule is broken.
    public static func validateAnnotation(_ content: JSONValue) throws(ProtocolError) {
        guard case .object = content else {
            throw ProtocolError(.invalidAnnotation, "an annotation must be a JSON object")
        }
        switch content.shapeProblem(nestingAtMost: maximumAnnotationDepth, valuesAtMost: maximumAnnotationValues) {
        case .tooDeep?:
            throw ProtocolError(
                .invalidAnnotation,
                "the annotation's arrays and objects nest deeper than \(maximumAnnotationDepth) levels")
        case .tooManyValues?:
            throw ProtocolError(
                .invalidAnnotation,
                "the annotation holds more than \(maximumAnnotationValues) JSON values: split it into several")
        case .notFinite?:
            // Only a value made in Swift can hold one (no JSON text does): it would be
            // written as null.
            throw ProtocolError(.invalidAnnotation, "the annotation holds a number that is not finite (NaN or ±∞)")
        case nil: break
        }
        guard let version = content["v"]?.number, version >= 1, version == version.rounded() else {
            throw ProtocolError(
                .invalidAnnotation, "the annotation needs \"v\", its Instant JSON version (a whole number)")
        }
        guard let type = content["type"]?.string, !type.isEmpty else {
            throw ProtocolError(
                .invalidAnnotation, "the annotation needs \"type\", such as \"pspdfkit/ink\" (a string)")
        }
        guard let page = content["pageIndex"]?.number, page >= 0, page == page.rounded() else {
            throw ProtocolError(.invalidAnnotation, "the annotation needs \"pageIndex\", a whole number from 0")
        }
        guard case .array(let box) = content["bbox"], box.count == 4, box.allSatisfy({ $0.number != nil }) else {
            throw ProtocolError(
                .invalidAnnotation, "the annotation needs \"bbox\": [left, top, width, height], four numbers")
        }
        if let width = box[2].number, let height = box[3].number, width < 0 || height < 0 {
            throw ProtocolError(.invalidAnnotation, "\"bbox\" width and height must not be negative")
        }
    }

    /// Checks `content` as ``validateAnnotation(_:)`` does, as the content of the annotation
    /// `id`: an `"id"` in the content, when it has one, must be that same string (compared
    /// by its bytes). Another would be stored under one id and read back under the other:
    /// an app that edits what it read would then be refused.
    ///
    /// ```swift
    /// try InstantJSON.validateAnnotation(change.content, id: change.id)
    /// ```
    public static func validateAnnotation(_ content: JSONValue, id: String) throws(ProtocolError) {
        try validateAnnotation(content)
        if let inside = content["id"], inside.string.map({ $0.utf8.elementsEqual(id.utf8) }) != true {
            throw ProtocolError(
                .invalidAnnotation,
                "the content's \"id\" is \(brief(inside)), not the annotation's id \(brief(.string(id))): "
                    + "leave it out, or make it the same string")
        }
    }

    /// A value as JSON text for a message, cut after 80 bytes.
    private static func brief(_ value: JSONValue) -> String {
        let text = value.jsonData()
        guard text.count > 80 else { return String(decoding: text, as: UTF8.self) }
        return String(decoding: text.prefix(80), as: UTF8.self) + "…"
    }
}

extension JSONValue {
    /// What makes a value unfit to be stored and sent as it is.
    package enum ShapeProblem: Sendable, Equatable {
        /// Its arrays and objects nest deeper than the limit.
        case tooDeep
        /// It holds a NaN or an infinity, which JSON cannot carry.
        case notFinite
        /// It holds more values than the limit.
        case tooManyValues
    }

    /// The first ``ShapeProblem`` of this value with arrays and objects nesting at most
    /// `limit` levels (a container counts 1, a scalar 0) and at most `values` values in all
    /// (itself included), or nil. Walks without recursion and stops at the first level past
    /// the limit.
    package func shapeProblem(nestingAtMost limit: Int, valuesAtMost values: Int = .max) -> ShapeProblem? {
        var pending: [(value: JSONValue, depth: Int)] = [(self, 1)]
        var seen = 0
        while let (value, depth) = pending.popLast() {
            seen += 1
            if seen > values { return .tooManyValues }
            switch value {
            case .array(let items):
                guard depth <= limit else { return .tooDeep }
                for item in items { pending.append((item, depth + 1)) }
            case .object(let members):
                guard depth <= limit else { return .tooDeep }
                for member in members.values { pending.append((member, depth + 1)) }
            case .double(let number) where !number.isFinite:
                return .notFinite
            default:
                continue
            }
        }
        return nil
    }
}
