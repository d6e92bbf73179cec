import Foundation

/// A tenant is one server, named by its normalised URL.
///
/// `HTTPS://Example.COM:443/instant/` and `https://example.com/instant` are the same tenant:
/// the scheme and host are lower-cased, a default port is dropped, and so are a trailing
/// slash, the query, the fragment and any user name or password.
///
/// ```swift
/// let tenant = try TenantURL("https://Example.com:443/")
/// tenant.string  // "https://example.com"
/// ```
public struct TenantURL: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The normalised URL.
    public let string: String

    public init(_ text: String) throws(StoreError) {
        guard text.utf8.count <= 2048, var components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else { throw .invalidServerURL(text) }
        components.scheme = scheme
        components.host = host.lowercased()
        if (scheme == "http" && components.port == 80) || (scheme == "https" && components.port == 443) {
            components.port = nil
        }
        components.user = nil
        components.password = nil
        components.query = nil
        components.fragment = nil
        while components.path.hasSuffix("/") { components.path.removeLast() }
        guard let normalised = components.string else { throw .invalidServerURL(text) }
        string = normalised
    }

    public init(_ url: URL) throws(StoreError) { try self.init(url.absoluteString) }

    /// A URL read back from the catalog, where only normalised URLs are written.
    init(normalized: String) { string = normalized }

    public var description: String { string }

    public static func < (lhs: TenantURL, rhs: TenantURL) -> Bool { lhs.string < rhs.string }
}
