import Foundation

/// Everything the client can fail with: Nutrient Instant's `InstantError` cases, with
/// their codes (stable: apps switch on them and logs quote them).
///
/// ```swift
/// do {
///     let descriptor = try client.documentDescriptor(forJWT: jwt)
/// } catch let error as InstantError where error.code == .invalidJWT {
///     // ask the backend for a new token
/// }
/// ```
public struct InstantError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure, with Instant's numeric code.
    public enum Code: Int, Sendable, CaseIterable {
        case unknown = 1
        case featureUnsupported = 2
        case invalidDocument = 3
        case accessDenied = 4
        case alreadyDownloaded = 5
        case databaseAccessFailed = 6
        case couldNotWriteToDisk = 7
        case invalidURL = 8
        case savingDisabled = 9
        case unmanagedDocument = 10
        case noSuchAnnotation = 11
        case unmanagedAnnotation = 12
        case couldNotReadFromDiskCache = 13
        case couldNotRemoveDiskCacheEntries = 14
        case requestFailed = 16
        case invalidServerData = 17
        case invalidRequest = 18
        case payloadLimitExceeded = 19
        case oldClient = 21
        case oldServer = 22
        case invalidJWT = 32
        case userIDMismatch = 33
        case attachmentNotLoaded = 40
        case noSuchAttachment = 41
        case couldNotCreateAttachment = 42
        case alreadyAuthenticating = 66
        case invalidJSONStructure = 112
        case invalidCustomData = 113

        /// The case's name, as Instant spells it (`invalidJWT`).
        public var name: String { String(describing: self) }
    }

    public var code: Code
    /// What happened and what to do, for a person.
    public var message: String
    /// For ``Code/databaseAccessFailed``: SQLite's extended result code.
    public var sqliteCode: Int32?
    /// For a busy server: the seconds it asked the client to wait (`Retry-After`).
    public var retryAfter: Int?
    /// For a failure of the local store: its stable code (`StoreError.code`), finer than
    /// ``code`` (`disk_full`, `read_only_store`, `corrupt_layer`…).
    public var storeCode: String?

    public init(_ code: Code, _ message: String, sqliteCode: Int32? = nil, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.sqliteCode = sqliteCode
        self.retryAfter = retryAfter
    }

    public var description: String {
        let sqlite = sqliteCode.map { " (SQLite \($0))" } ?? ""
        return "\(code.name) (\(code.rawValue)): \(message)\(sqlite)"
    }
}
