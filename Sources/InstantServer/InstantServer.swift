import Foundation
import Hummingbird
import InstantProtocol
import InstantStore
import JWTKit
import Logging
import NIOPosix

/// The reference sync server: its storage, token verifier and listeners, and the router
/// that serves the backend API (`/api`) and the client API (`/i/v1`).
///
/// ```swift
/// let server = try await InstantServer(configuration: configuration)
/// let app = Application(router: server.router(), configuration: .init(address: .hostname("127.0.0.1", port: 5000)))
/// try await app.runService()
/// ```
public final class InstantServer: Sendable {
    public let configuration: ServerConfiguration
    let database: ServerDatabase
    let pdfs: InstantStore
    let verifier: TokenVerifier
    let listeners: ListenerRegistry
    let writes = LayerWriteQueue()
    let uploads = UploadReservations()
    /// This server's hold on its data directory, for its whole life.
    let dataLock: DataDirectoryLock
    /// JSON request bodies being worked on at once (``BodyBudget``).
    let bodies: BodyBudget
    /// The tenant under which the server's PDFs sit in its blob store.
    let pdfTenant: TenantURL
    /// Documents whose PDF the store holds but the database does not know, found at start
    /// (logged by the executable).
    public let strays: [String]
    /// The store name of an upload whose `document_id` is not known yet (multipart with
    /// the file before the field): NUL, so no backend identifier looks like it.
    static let uploadPrefix = "\u{0}upload/"

    /// Starts the server's storage on `configuration.dataDirectory`, which it holds with
    /// `dataLock` when given (taken earlier, for work before the start), else with a lock
    /// of its own: ``DataDirectoryError`` (`inUse`) when another server holds it.
    public init(configuration: ServerConfiguration, dataLock: DataDirectoryLock? = nil) async throws {
        self.configuration = configuration
        bodies = BodyBudget(capacity: configuration.maxBodyBytesInFlight, payloadLimit: configuration.maxPayloadSize)
        listeners = ListenerRegistry(
            limits: .init(
                total: configuration.maxListeners, perLayer: configuration.maxListenersPerLayer,
                perToken: configuration.maxListenersPerToken))
        // Before anything is read or cleaned up: the start's clean-up is only right for a
        // directory no other server works in.
        if let dataLock {
            guard dataLock.directory.standardizedFileURL == configuration.dataDirectory.standardizedFileURL else {
                throw DataDirectoryError(
                    code: .lockFailed,
                    message:
                        "the lock given is for \(dataLock.directory.path), not the data directory \(configuration.dataDirectory.path)"
                )
            }
            self.dataLock = dataLock
        } else {
            self.dataLock = try DataDirectoryLock(directory: configuration.dataDirectory)
        }
        let data = configuration.dataDirectory
        database = try DataDirectoryError.sayingAFullDisk(data) {
            try ServerDatabase(path: data.appendingPathComponent("server.sqlite").path)
        }
        // Deletions a kill cut short: their rows are hidden already; they go in the background.
        database.reap()
        pdfTenant = try TenantURL("http://instant-server.local")
        // The origin of its PDFs: no prune, GC or instantctl removes one, and uploads are synced.
        pdfs = try DataDirectoryError.sayingAFullDisk(data) {
            try InstantStore(root: data.appendingPathComponent("pdfs"), role: .origin)
        }
        // After a rebuild of the PDF store's catalog, its documents (which have no layers
        // there) are gone while their PDFs are not: link each document to its PDF again.
        // Sets of identifiers by their bytes: two spellings Swift calls equal are two documents.
        let linked = Set(
            try pdfs.cacheEntries(tenant: pdfTenant).filter { $0.pdfSHA256 != nil }
                .map { ExactString($0.documentIdentifier) })
        let documents = try await database.documents()
        for info in documents where !linked.contains(ExactString(info.documentId)) {
            if let hash = BlobHash(hex: info.sha256) {
                try pdfs.attachPDF(hash, tenant: pdfTenant, document: info.documentId)
            }
        }
        // A store document without a database row is an upload that never answered 201
        // (its PDF goes), or a deletion cut short or a database restored from an older
        // backup (kept: an operator decides, and `DELETE /api/documents/{id}` releases it).
        let known = Set(documents.map { ExactString($0.documentId) })
        var strays: [String] = []
        for stale in linked.subtracting(known).map(\.string) {
            if stale.hasPrefix(Self.uploadPrefix) {
                try pdfs.removeDocument(tenant: pdfTenant, document: stale)
            } else {
                strays.append(stale)
            }
        }
        self.strays = strays.sorted()
        verifier = TokenVerifier(
            keys: try await JWTKeys.verifier(
                pem: configuration.jwtKey.publicKeyPEM, algorithm: configuration.jwtKey.algorithm),
            algorithm: configuration.jwtKey.algorithm)
    }

    /// Lets go of the data directory's lock (`server.lock`, also one given to
    /// ``init(configuration:dataLock:)``), for another server to start on it in this
    /// process (a restart): call it once the application serving this server has stopped,
    /// and use the server no more. Its databases close when the object goes away. Without
    /// it, the lock too goes only then, which a task still holding the server may delay.
    public func close() {
        dataLock.release()
    }

    /// The router with every route, behind the JSON error middleware.
    public func router() -> Router<ServerContext> {
        let router = Router(context: ServerContext.self)
        router.add(middleware: ErrorMiddleware())
        BackendRoutes(server: self).register(on: router.group("api"))
        ClientRoutes(server: self).register(on: router.group("i/v1"))
        return router
    }

    /// How many listeners are parked now (for logs, metrics and benchmarks).
    public var parkedListeners: Int {
        get async { await listeners.waiting }
    }

    /// Runs blocking store work (file I/O, fsync, catalog transactions) on NIO's thread
    /// pool, so it never holds a thread of Swift's cooperative pool.
    func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// Removes a document from the server's store (its PDF goes unless another document
    /// uses it), off the cooperative pool; false when the store has no such document.
    @discardableResult
    func releaseStoredDocument(_ name: String) async throws -> Bool {
        let (pdfs, tenant) = (self.pdfs, pdfTenant)
        return try await blocking { () throws -> Bool in
            do {
                try pdfs.removeDocument(tenant: tenant, document: name)
                return true
            } catch StoreError.noSuchDocument {
                return false
            }
        }
    }

    /// Tells listeners that a layer was written (and created by that write, when `created`).
    func changed(document: String, _ layer: LayerRef?, created: Bool = false) async {
        guard let layer else { return }
        if created { await listeners.post(.created(layer: layer.name), document: document) }
        await listeners.post(.revision(layer: layer.name, layer.revision), document: document)
    }
}

/// Identifiers with an upload or deletion in flight, so two uploads of one `document_id`
/// cannot both point the blob store's document at their PDF, and a deletion's release of
/// the PDF cannot land on a new upload of the same id.
actor UploadReservations {
    private var reserved = Set<ExactString>()

    func reserve(_ identifier: String) throws(ProtocolError) {
        guard reserved.insert(ExactString(identifier)).inserted else {
            throw ProtocolError(.alreadyExists, "another upload or deletion of this document_id is in progress")
        }
    }

    func release(_ identifier: String) { reserved.remove(ExactString(identifier)) }
}

extension Result where Failure == any Error {
    /// The outcome of `body`, so cleanup can run (and await) before it is returned or thrown.
    init(_ body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
