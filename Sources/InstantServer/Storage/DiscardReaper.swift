import Logging

/// Removes the rows of deleted layers and documents, and given-up partial copies, in the
/// background: a deletion hides its rows at once and signals the reaper, which works a
/// batch per transaction (``ServerDatabase/dropDiscarded()``) without any request waiting
/// for it. Signals that come while it works make it go around once more.
actor DiscardReaper {
    private var running = false
    private var again = false
    private let logger = Logger(label: "instant-server.reaper")

    /// Starts a pass unless one is running (then it runs once more when done).
    func signal(_ database: ServerDatabase) {
        guard !running else {
            again = true
            return
        }
        running = true
        Task { await self.loop(database) }
    }

    private func loop(_ database: ServerDatabase) async {
        repeat {
            again = false
            do {
                try await database.dropDiscarded()
            } catch {
                // Hidden rows stay hidden; the next deletion or start tries again.
                logger.error("removing deleted rows failed", metadata: ["error": "\(error)"])
            }
        } while again
        running = false
    }
}
