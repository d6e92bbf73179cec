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

    /// Checks `content` is an annotation object with a version, a type, a page index and a
    /// bounding box; the error says which field is wrong.
    public static func validateAnnotation(_ content: JSONValue) throws(ProtocolError) {
        guard case .object = content else {
            throw ProtocolError(.invalidAnnotation, "an annotation must be a JSON object")
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
}
