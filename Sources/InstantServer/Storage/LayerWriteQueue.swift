import InstantStore

/// Serialises writes per layer, so a flood of writes to one layer queues on that layer
/// alone, and a write to another layer waits for at most one transaction ahead of it
/// rather than for the whole flood.
///
/// SQLite has one writer, so transactions still commit one at a time; each is short (a
/// sync's changes are capped, and no write transaction reads pages of records).
///
/// ```swift
/// let results = try await queue.run(document: "d", layer: "") { try await database.write { … } }
/// ```
actor LayerWriteQueue {
    /// By the identifiers' bytes, as the database tells layers apart.
    private struct Key: Hashable {
        var document: ExactString
        var layer: ExactString
    }

    private var busy = Set<Key>()
    private var waiting: [Key: [CheckedContinuation<Void, Never>]] = [:]

    /// Runs `body` once every earlier write to the layer has finished.
    nonisolated func run<T: Sendable>(document: String, layer: String, _ body: () async throws -> T) async throws -> T {
        let key = Key(document: ExactString(document), layer: ExactString(layer))
        await acquire(key)
        do {
            let result = try await body()
            await release(key)
            return result
        } catch {
            await release(key)
            throw error
        }
    }

    private func acquire(_ key: Key) async {
        guard busy.insert(key).inserted else {
            await withCheckedContinuation { waiting[key, default: []].append($0) }
            return
        }
    }

    /// Hands the layer to the next writer in line (it stays busy), or frees it.
    private func release(_ key: Key) {
        guard var line = waiting[key], !line.isEmpty else {
            busy.remove(key)
            return
        }
        let next = line.removeFirst()
        waiting[key] = line.isEmpty ? nil : line
        next.resume()
    }
}
