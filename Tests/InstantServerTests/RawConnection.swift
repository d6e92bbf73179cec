import Foundation
import ServerTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A bare TCP connection to the test server, for what an HTTP client library will not do:
/// send half a request, go silent, or hang up in the middle of a long poll.
final class RawConnection: @unchecked Sendable {
    private let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    convenience init(_ server: TestServer) throws {
        try self.init(port: Int(server.base.split(separator: ":").last ?? "") ?? 0)
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Reads until the server closes the connection (true) or `seconds` pass (false), off
    /// Swift's cooperative pool.
    func readUntilClosed(seconds: Int) async -> (data: Data, closed: Bool) {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [fd] in
                var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let deadline = Date().addingTimeInterval(TimeInterval(seconds))
                var data = Data()
                var buffer = [UInt8](repeating: 0, count: 65536)
                while Date() < deadline {
                    let count = read(fd, &buffer, buffer.count)
                    if count == 0 { return continuation.resume(returning: (data, true)) }
                    if count > 0 { data.append(contentsOf: buffer[0..<count]) }
                    if count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                        return continuation.resume(returning: (data, true))
                    }
                }
                continuation.resume(returning: (data, false))
            }
        }
    }

    func close() { Glibc.close(fd) }
}
