import InstantStore

extension InstantError {
    /// The client's error for a store failure, with the store's message (which says what
    /// to do) and, for a database failure, SQLite's code.
    public init(_ error: StoreError) {
        let code: Code =
            switch error {
            case .diskFull, .io, .readOnlyStore: .couldNotWriteToDisk
            case .database, .busy, .catalogCorrupt: .databaseAccessFailed
            case .corruptBlob, .corruptLayer, .noSuchBlob, .hashMismatch, .sizeMismatch: .couldNotReadFromDiskCache
            case .noSuchAnnotation: .noSuchAnnotation
            case .annotationAlreadyExists, .invalidIdentifier: .invalidRequest
            case .invalidServerURL: .invalidURL
            case .invalidAnnotationContent: .invalidJSONStructure
            case .pendingChanges, .layerUnreadable: .couldNotRemoveDiskCacheEntries
            case .noSuchDocument, .noSuchLayer, .documentHasNoPDF, .layerRemoved, .layerClosed: .invalidDocument
            default: .unknown
            }
        var sqlite: Int32?
        if case .database(let extended, _) = error { sqlite = extended }
        self.init(code, "\(error) [\(error.code)]", sqliteCode: sqlite)
        storeCode = error.code
    }
}
