import Foundation

/// Everything `instant-server` needs, read from the environment with Document Engine's
/// names where they exist.
///
/// ```swift
/// let configuration = try ServerConfiguration(environment: ProcessInfo.processInfo.environment)
/// ```
public struct ServerConfiguration: Sendable {
    /// `HOST`, default `127.0.0.1`.
    public var host: String
    /// `PORT`, default 5000; 0 picks a free port.
    public var port: Int
    /// `INSTANT_SERVER_DATA`, default `./instant-server-data`.
    public var dataDirectory: URL
    /// `API_AUTH_TOKEN`: the backend API's shared secret.
    public var apiAuthToken: String
    /// `JWT_PUBLIC_KEY` (PEM text, or the path of a PEM file) and `JWT_ALGORITHM`.
    public var jwtKey: JWTKeyConfiguration
    /// `MAX_UPLOAD_SIZE_BYTES`: the largest PDF upload, default 1 GiB.
    public var maxUploadSize: Int
    /// `MAX_PAYLOAD_SIZE_BYTES`: the largest JSON body, default 32 MiB.
    public var maxPayloadSize: Int
    /// `LISTEN_TIMEOUT_MAX_SECONDS`: the longest a listener may wait, default 60.
    public var maximumListenTimeout: Int
    /// `MAX_CHANGES_PER_SYNC`: the most changes one sync may carry, default 10,000.
    public var maxChangesPerSync = 10_000
    /// `PAGE_MAX_RECORDS`: the most records one snapshot or changes page carries, default
    /// 1,000; a page also ends once its records' content reaches 4 MiB.
    public var pageLimits = PageLimits()
    /// `MAX_ANNOTATIONS_LISTED`: the most annotations `GET /api/…/annotations` returns
    /// before it says `truncated` (NDJSON streams them all), default 10,000.
    public var maxAnnotationsListed = 10_000
    /// `MAX_LISTENERS` and `MAX_LISTENERS_PER_LAYER`: parked listeners in all and on one
    /// layer (defaults 10,000 and 2,000); past them, `503 serverBusy` with `Retry-After`.
    public var maxListeners = 10_000
    public var maxListenersPerLayer = 2_000
    /// `MAX_LISTENERS_PER_TOKEN`: parked listeners of one JWT (default 64), so that one
    /// token cannot take a layer's places (a client listens once per layer).
    public var maxListenersPerToken = 64
    /// `IDLE_TIMEOUT_SECONDS`: a connection with no request in flight (or a request that
    /// stops sending) is closed after this long, default 90.
    public var idleTimeout = 90
    /// `MAX_BODY_BYTES_IN_FLIGHT`: the JSON request bodies (syncs, backend writes) decoded
    /// and worked on at once, each counted once it has arrived whole, default twice the
    /// payload limit (64 MiB), never less than it; past it, `503 serverBusy` with
    /// `Retry-After`. A decoded body takes many times its size in memory: this bounds what
    /// they take together. One body is always let in when no other is being worked on.
    public var maxBodyBytesInFlight = 64 << 20

    public init(
        host: String = "127.0.0.1", port: Int = 5000, dataDirectory: URL, apiAuthToken: String,
        jwtKey: JWTKeyConfiguration, maxUploadSize: Int = 1 << 30, maxPayloadSize: Int = 32 << 20,
        maximumListenTimeout: Int = 60
    ) {
        self.host = host
        self.port = port
        self.dataDirectory = dataDirectory
        self.apiAuthToken = apiAuthToken
        self.jwtKey = jwtKey
        self.maxUploadSize = maxUploadSize
        self.maxPayloadSize = maxPayloadSize
        self.maximumListenTimeout = maximumListenTimeout
        self.maxBodyBytesInFlight = 2 * maxPayloadSize
    }

    /// Reads the configuration from `environment`; the error lists everything missing or
    /// wrong at once. Without `requireCredentials` (development mode), a missing token or
    /// key is left for ``DevelopmentSetup`` to fill in.
    public init(environment: [String: String], requireCredentials: Bool = true) throws(ConfigurationError) {
        var problems: [String] = []
        func integer(_ name: String, _ fallback: Int, minimum: Int, maximum: Int = 1 << 40) -> Int {
            guard let text = environment[name], !text.isEmpty else { return fallback }
            guard let value = Int(text), value >= minimum, value <= maximum else {
                problems.append("\(name) must be a whole number from \(minimum) to \(maximum), not \"\(text)\"")
                return fallback
            }
            return value
        }
        let host = environment["HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1"
        let port = integer("PORT", 5000, minimum: 0)
        let data = environment["INSTANT_SERVER_DATA"].flatMap { $0.isEmpty ? nil : $0 } ?? "instant-server-data"
        let token = environment["API_AUTH_TOKEN"] ?? ""
        if token.isEmpty && requireCredentials {
            problems.append("API_AUTH_TOKEN is not set: the secret backends send as Authorization: Token token=\"…\"")
        }
        var key: JWTKeyConfiguration?
        let algorithmName = environment["JWT_ALGORITHM"].flatMap { $0.isEmpty ? nil : $0 } ?? "RS256"
        let algorithm = JWTAlgorithmName(rawValue: algorithmName)
        if algorithm == nil {
            problems.append(
                "JWT_ALGORITHM \"\(algorithmName)\" is not supported; use one of "
                    + JWTAlgorithmName.allCases.map(\.rawValue).joined(separator: ", "))
        }
        if let text = environment["JWT_PUBLIC_KEY"], !text.isEmpty {
            if let algorithm {
                do throws(ConfigurationError) {
                    key = try JWTKeyConfiguration(publicKey: try Self.readPEM(text), algorithm: algorithm)
                } catch {
                    problems.append(error.problems.joined(separator: "; "))
                }
            }
        } else if requireCredentials {
            problems.append(
                "JWT_PUBLIC_KEY is not set: the PEM public key (or its file's path) client tokens are signed for")
        }
        var configuration = ServerConfiguration(
            host: host, port: port, dataDirectory: URL(fileURLWithPath: data),
            apiAuthToken: token,
            jwtKey: key ?? JWTKeyConfiguration(unchecked: "", algorithm: algorithm ?? .rs256),
            maxUploadSize: integer("MAX_UPLOAD_SIZE_BYTES", 1 << 30, minimum: 1),
            maxPayloadSize: integer("MAX_PAYLOAD_SIZE_BYTES", 32 << 20, minimum: 1024),
            maximumListenTimeout: integer("LISTEN_TIMEOUT_MAX_SECONDS", 60, minimum: 1))
        configuration.maxChangesPerSync = integer("MAX_CHANGES_PER_SYNC", 10_000, minimum: 1, maximum: 1_000_000)
        configuration.pageLimits = PageLimits(
            records: integer("PAGE_MAX_RECORDS", 1000, minimum: 1, maximum: PageLimits.maximumRecords))
        configuration.maxAnnotationsListed = integer(
            "MAX_ANNOTATIONS_LISTED", 10_000, minimum: 1, maximum: PageLimits.maximumRecords)
        configuration.maxListeners = integer("MAX_LISTENERS", 10_000, minimum: 1, maximum: 1_000_000)
        configuration.maxListenersPerLayer = integer("MAX_LISTENERS_PER_LAYER", 2_000, minimum: 1, maximum: 1_000_000)
        configuration.maxListenersPerToken = integer("MAX_LISTENERS_PER_TOKEN", 64, minimum: 1, maximum: 1_000_000)
        configuration.idleTimeout = integer("IDLE_TIMEOUT_SECONDS", 90, minimum: 1, maximum: 86_400)
        configuration.maxBodyBytesInFlight = integer(
            "MAX_BODY_BYTES_IN_FLIGHT", 2 * configuration.maxPayloadSize, minimum: 1024)
        if configuration.maxBodyBytesInFlight < configuration.maxPayloadSize {
            problems.append(
                "MAX_BODY_BYTES_IN_FLIGHT (\(configuration.maxBodyBytesInFlight)) must be at least "
                    + "MAX_PAYLOAD_SIZE_BYTES (\(configuration.maxPayloadSize)), or a body of the largest size "
                    + "gets in only when no other is being worked on")
        }
        if configuration.idleTimeout <= configuration.maximumListenTimeout {
            problems.append(
                "IDLE_TIMEOUT_SECONDS (\(configuration.idleTimeout)) must be above LISTEN_TIMEOUT_MAX_SECONDS "
                    + "(\(configuration.maximumListenTimeout)), or clients between two listens are cut off")
        }
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
        self = configuration
    }

    /// PEM text as given, or the contents of the file it names.
    static func readPEM(_ text: String) throws(ConfigurationError) -> String {
        if text.contains("-----BEGIN") { return text.replacingOccurrences(of: "\\n", with: "\n") }
        guard let data = FileManager.default.contents(atPath: text) else {
            throw ConfigurationError(problems: ["JWT_PUBLIC_KEY is neither PEM text nor a readable file: \(text)"])
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The algorithms a client token may be signed with. `none` and HMAC are refused by design:
/// a backend that shares a secret with the server could forge any user's token.
public enum JWTAlgorithmName: String, Sendable, CaseIterable {
    case rs256 = "RS256"
    case rs512 = "RS512"
    case es256 = "ES256"
    case es512 = "ES512"
}

/// The public key client tokens are verified with, and its algorithm.
public struct JWTKeyConfiguration: Sendable {
    public let publicKeyPEM: String
    public let algorithm: JWTAlgorithmName

    /// Checks the PEM parses as a key of `algorithm`'s kind.
    public init(publicKey pem: String, algorithm: JWTAlgorithmName) throws(ConfigurationError) {
        do {
            try JWTKeys.checkPublicKey(pem: pem, algorithm: algorithm)
        } catch {
            throw ConfigurationError(problems: [
                "JWT_PUBLIC_KEY is not a \(algorithm.rawValue) public key in PEM form (\(error))"
            ])
        }
        self.publicKeyPEM = pem
        self.algorithm = algorithm
    }

    init(unchecked pem: String, algorithm: JWTAlgorithmName) {
        self.publicKeyPEM = pem
        self.algorithm = algorithm
    }
}

/// What is wrong with the configuration, every problem at once.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var problems: [String]
    public var description: String {
        "instant-server cannot start:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
            + "\n(run `instant-server --dev` to start with a generated key and token)"
    }
}
