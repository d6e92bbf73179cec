/// One annotation a backend sends: `POST /api/documents/{id}/annotations` (alone, or in
/// `{"annotations": [...]}`) and `PUT …/annotations/{aid}` (without `id`).
public struct AnnotationInput: Sendable, Equatable, JSONRepresentable {
    /// The annotation's id; generated when absent.
    public var id: String?
    /// Its Instant JSON.
    public var content: JSONValue
    /// Recorded as `createdBy` / `updatedBy`.
    public var userID: String?

    public init(id: String? = nil, content: JSONValue, userID: String? = nil) {
        self.id = id
        self.content = content
        self.userID = userID
    }
}

/// `POST /api/documents/{id}/layers`: `{"name": "review", "source_layer_name"?: ""}`.
public struct LayerCreation: Sendable, Equatable, JSONRepresentable {
    public var name: String
    /// The layer copied (default: the default layer `""`).
    public var sourceLayerName: String?

    public init(name: String, sourceLayerName: String? = nil) {
        self.name = name
        self.sourceLayerName = sourceLayerName
    }
}

// MARK: JSON

extension AnnotationInput {
    public init(json: JSONValue) throws(ProtocolError) { try self.init(json: json, path: "") }

    init(json: JSONValue, path: String) throws(ProtocolError) {
        let fields = try JSONFields(json, path: path)
        self.init(
            id: try fields.optional("id", .string), content: try fields.required("content", .any),
            userID: try fields.optional("user_id", .string))
    }

    /// `{"annotations": [AnnotationInput, …]}`, each read with its own path.
    public static func list(json: JSONValue) throws(ProtocolError) -> [AnnotationInput] {
        try JSONFields(json).array("annotations") { value, path throws(ProtocolError) in
            try AnnotationInput(json: value, path: path)
        }
    }

    public var json: JSONValue {
        .object(omittingNil: ["id": id.map { .string($0) }, "content": content, "user_id": userID.map { .string($0) }])
    }
}

extension LayerCreation {
    public init(json: JSONValue) throws(ProtocolError) {
        let fields = try JSONFields(json)
        self.init(
            name: try fields.required("name", .string),
            sourceLayerName: try fields.optional("source_layer_name", .string))
    }

    public var json: JSONValue {
        .object(omittingNil: ["name": .string(name), "source_layer_name": sourceLayerName.map { .string($0) }])
    }
}
