import Foundation
import GRDB
import InstantServer

extension TestServer {
    /// Moves every verdict the server keeps for clients' changes back past the replay
    /// window (docs/PROTOCOL.md: 7 days), as if the clients had been offline that long:
    /// the next sync forgets them, and a change sent again is decided afresh.
    public func ageVerdictsPastTheReplayWindow() throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let database = try DatabaseQueue(
            path: dataDirectory.appendingPathComponent("server.sqlite").path, configuration: configuration)
        try database.write { db in
            try db.execute(
                sql: "UPDATE appliedChange SET appliedAt = ?", arguments: [Date().addingTimeInterval(-8 * 86400)])
        }
        try database.close()
    }
}
