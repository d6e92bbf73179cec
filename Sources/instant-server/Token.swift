import ArgumentParser
import Foundation
import InstantServer

struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a client JWT, for development and tests.",
        discussion: """
            Signs with the private key (RSA: RS256 unless --algorithm RS512; P-256: ES256; \
            P-521: ES512). Example:
              instant-server token --document contract-7 --layer review --user ana \\
                --permissions read-document,write --expires-in 1h --private-key key.pem
            """)

    @Option(help: "The document_id the token is for.") var document: String
    @Option(help: "The layer (default: the default layer).") var layer: String?
    @Option(help: "The user_id recorded on changes.") var user: String?
    @Option(help: "Comma-separated: read-document, write, download, all (default: all three).")
    var permissions: String?
    @Option(help: "Lifetime such as 90s, 30m, 1h, 7d.") var expiresIn = "1h"
    @Option(help: "PEM file of the private key.") var privateKey: String
    @Option(help: "RS256, RS512, ES256 or ES512 (default: from the key).") var algorithm: String?

    func validate() throws {
        guard !document.isEmpty else { throw ValidationError("--document must not be empty") }
        // A name the server does not know grants nothing, silently: a typo ("wirte") would
        // give a token that is refused later, far from its cause.
        let known = Permissions.allNames + ["all"]
        if permissions != nil && permissionNames.isEmpty {
            throw ValidationError("--permissions names none; give one or more of \(known.joined(separator: ", "))")
        }
        for name in permissionNames where !known.contains(name) {
            throw ValidationError(
                "--permissions: \"\(name)\" is not one of \(known.joined(separator: ", "))")
        }
        guard TokenLifetime.parse(expiresIn) != nil else {
            throw ValidationError("--expires-in must look like 90s, 30m, 1h or 7d, not \"\(expiresIn)\"")
        }
        if let algorithm, JWTAlgorithmName(rawValue: algorithm) == nil {
            throw ValidationError("--algorithm must be RS256, RS512, ES256 or ES512")
        }
    }

    /// The names given with --permissions (none when it is left out).
    private var permissionNames: [String] {
        (permissions ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
    }

    func run() async throws {
        guard let data = FileManager.default.contents(atPath: privateKey) else {
            throw ValidationError("cannot read the private key at \(privateKey)")
        }
        let claims = InstantClaims(
            documentID: document, layer: layer, userID: user,
            permissions: permissions == nil ? Permissions.allNames : permissionNames,
            expiration: Date().addingTimeInterval(TokenLifetime.parse(expiresIn) ?? 3600))
        let (keys, _) = try await JWTKeys.signer(
            privateKeyPEM: String(decoding: data, as: UTF8.self), preferred: algorithm.flatMap(JWTAlgorithmName.init))
        print(try await keys.sign(claims))
    }
}
