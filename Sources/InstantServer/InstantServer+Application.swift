import Foundation
import Hummingbird
import Logging

extension InstantServer {
    /// The Hummingbird application serving this server on the configured host and port.
    ///
    /// `onServerRunning` receives the bound port (useful with port 0).
    public func application(
        logger: Logger = Logger(label: "instant-server"),
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        Application(
            router: router(),
            server: .http1(configuration: .init(idleTimeout: .seconds(Int64(configuration.idleTimeout)))),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "instant-server"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }
}

/// `instant-server --dev`: a key pair and API token kept in the data directory (made on
/// first use), so tokens stay valid across restarts.
public struct DevelopmentSetup: Sendable {
    public var configuration: ServerConfiguration
    public var privateKeyPath: String
    public var apiAuthToken: String

    /// Reads or creates `dev/private-key.pem`, `dev/public-key.pem` and `dev/api-token`
    /// under the data directory of `base`.
    public static func prepare(base: ServerConfiguration) throws -> DevelopmentSetup {
        let directory = base.dataDirectory.appendingPathComponent("dev")
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let privatePath = directory.appendingPathComponent("private-key.pem")
        let publicPath = directory.appendingPathComponent("public-key.pem")
        let tokenPath = directory.appendingPathComponent("api-token")
        if !FileManager.default.fileExists(atPath: privatePath.path) {
            let pair = JWTKeys.developmentKeyPair()
            try Data(pair.privateKey.utf8).write(to: privatePath, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: privatePath.path)
            try Data(pair.publicKey.utf8).write(to: publicPath, options: .atomic)
        }
        if !FileManager.default.fileExists(atPath: tokenPath.path) {
            let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            try Data(token.utf8).write(to: tokenPath, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: tokenPath.path)
        }
        let publicKey = String(decoding: try Data(contentsOf: publicPath), as: UTF8.self)
        let token = String(decoding: try Data(contentsOf: tokenPath), as: UTF8.self)
        var configuration = base
        configuration.apiAuthToken = token
        configuration.jwtKey = try JWTKeyConfiguration(publicKey: publicKey, algorithm: .es256)
        return DevelopmentSetup(configuration: configuration, privateKeyPath: privatePath.path, apiAuthToken: token)
    }
}

/// Token lifetimes as people write them: `90s`, `30m`, `1h`, `7d`.
public enum TokenLifetime {
    public static func parse(_ text: String) -> TimeInterval? {
        guard let unit = text.last, let value = Double(text.dropLast()), value > 0 else {
            return Double(text).flatMap { $0 > 0 ? $0 : nil }
        }
        switch unit {
        case "s": return value
        case "m": return value * 60
        case "h": return value * 3600
        case "d": return value * 86400
        default: return nil
        }
    }
}
