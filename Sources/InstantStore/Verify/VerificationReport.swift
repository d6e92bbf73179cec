import Foundation

/// One thing ``InstantStore/verify(_:)`` found wrong.
public struct Problem: Sendable, Equatable, Codable, CustomStringConvertible {
    /// What kind of problem, as a stable code.
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case catalogIntegrity = "catalog_integrity"
        case missingBlob = "missing_blob"
        case corruptBlob = "corrupt_blob"
        case referenceCountDrift = "reference_count_drift"
        case layerCountDrift = "layer_count_drift"
        case orphanFile = "orphan_file"
        case deadTempFile = "dead_temp_file"
        case pendingTombstone = "pending_tombstone"
        case missingLayer = "missing_layer"
        case corruptLayer = "corrupt_layer"
        case layerMarkedRemoved = "layer_marked_removed"
        case layerSummaryDrift = "layer_summary_drift"
        /// A file others may read (an older build made it 0644); repair makes it 0600.
        case loosePermissions = "loose_permissions"
        /// A file that cannot be opened now (permissions, descriptors): left untouched.
        case inaccessibleFile = "inaccessible_file"
        /// A file written by a newer version: reported, never repaired.
        case unsupportedFormat = "unsupported_format_version"
    }

    public var kind: Kind
    /// What it concerns: a hash, a relative path, a layer.
    public var subject: String
    /// What exactly is wrong.
    public var detail: String
    /// Repair fixed it.
    public var fixed: Bool = false

    public var description: String { "\(kind.rawValue): \(subject): \(detail)\(fixed ? " (fixed)" : "")" }
}

/// How ``InstantStore/verify(_:)`` checks the store.
public struct VerifyOptions: Sendable {
    /// Decompress and hash every blob (or a sample), and decode every layer record.
    public var deep = false
    /// With `deep`, the fraction of blobs to check (1 = all); the least recently verified first.
    public var sampleFraction = 1.0
    /// Fix what can be fixed: see ``InstantStore/verify(_:)``.
    public var repair = false
    /// Called as work advances (from the calling thread).
    public var progress: (@Sendable (VerifyProgress) -> Void)?

    public init(
        deep: Bool = false, sampleFraction: Double = 1.0, repair: Bool = false,
        progress: (@Sendable (VerifyProgress) -> Void)? = nil
    ) {
        self.deep = deep
        self.sampleFraction = sampleFraction
        self.repair = repair
        self.progress = progress
    }
}

/// How far a verification has got.
public struct VerifyProgress: Sendable {
    public var phase: String
    public var completed: Int
    public var total: Int
    public var bytes: Int64
}

/// What a verification checked and found.
public struct VerificationReport: Sendable, Equatable, Codable {
    public var problems: [Problem] = []
    public var blobsChecked = 0
    public var blobsDeepChecked = 0
    /// Decompressed bytes read by deep checks.
    public var bytesDeepChecked: Int64 = 0
    public var layersChecked = 0
    /// Pending local changes carried into a fresh layer file when their own was corrupt.
    public var pendingChangesSalvaged = 0
    /// Pending local changes that could not be read back from a corrupt layer (its file is kept in quarantine/).
    public var pendingChangesUnreadable = 0
    /// Pending local changes the catalog counted in a layer whose file and `-wal` were both
    /// gone when it was repaired: nothing was left to read them from.
    public var pendingChangesLost = 0
    /// Names in `blobs/` and `layers/` the store never makes (relative paths): reported,
    /// never touched, and no problem of the store's (they do not make it unclean).
    public var strayFiles: [String] = []
    /// What `quarantine/` holds, with the pending changes of each layer there.
    public var quarantine: [QuarantinedFile] = []

    /// Problems that remain (not fixed).
    public var remaining: [Problem] { problems.filter { !$0.fixed } }
    /// Whether nothing is wrong (anymore).
    public var isClean: Bool { remaining.isEmpty }
}
