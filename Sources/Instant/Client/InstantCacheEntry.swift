import InstantStore

/// One document of this client's server in the local store: `listCacheEntries()`.
public struct InstantCacheEntry: Sendable, Equatable {
    /// What is wrong with an entry, if anything.
    public struct State: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Its PDF or a layer failed a check: remove it and download it again.
        public static let corrupted = State(rawValue: 1)
        /// No layer uses it: `removeUnreferencedCacheEntries()` may purge it.
        public static let unreferenced = State(rawValue: 2)
        /// Layers are stored without the document's PDF, which a download never leaves:
        /// the entry is inconsistent.
        public static let layerAbsurdity = State(rawValue: 4)
    }

    public var documentIdentifier: String
    /// The compressed PDF plus all its layers, in bytes.
    public var overallDiskSpace: Int64
    /// The names of its layers in the store. A `Set<String>`, as in Instant: two names
    /// Swift calls equal (canonically equivalent Unicode), which are two layers in the
    /// store, count once here.
    public var downloadedLayerNames: Set<String>
    public var entryState: State

    /// The client's view of a store entry (`instantctl cache` shows every tenant's this way).
    public init(_ entry: CacheEntry) {
        documentIdentifier = entry.documentIdentifier
        overallDiskSpace = entry.overallDiskSpace
        downloadedLayerNames = Set(entry.downloadedLayerNames)
        var state: State = []
        if entry.isCorrupted { state.insert(.corrupted) }
        if entry.isUnreferenced { state.insert(.unreferenced) }
        if entry.pdfSHA256 == nil && !entry.downloadedLayerNames.isEmpty { state.insert(.layerAbsurdity) }
        entryState = state
    }
}
