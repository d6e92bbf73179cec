import Foundation
import GRDB
import InstantServer

extension TestServer {
    /// Moves the verdicts the server keeps for clients' changes (those of `changeIds`, or
    /// all) `days` back in time, as if the clients had been offline that long: past the
    /// replay window (docs/PROTOCOL.md: 7 days), the next sync forgets them, and a change
    /// sent again is decided afresh.
    public func ageVerdicts(byDays days: Int = 8, changeIds: ClosedRange<Int64>? = nil) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let database = try DatabaseQueue(
            path: dataDirectory.appendingPathComponent("server.sqlite").path, configuration: configuration)
        let range = changeIds ?? Int64.min...Int64.max
        try database.write { db in
            // The text GRDB stores dates as: "YYYY-MM-DD HH:MM:SS.SSS".
            try db.execute(
                sql: """
                    UPDATE appliedChange SET appliedAt = strftime('%Y-%m-%d %H:%M:%f', appliedAt, ?)
                    WHERE changeId BETWEEN ? AND ?
                    """, arguments: ["-\(days) days", range.lowerBound, range.upperBound])
        }
        try database.close()
    }
}
