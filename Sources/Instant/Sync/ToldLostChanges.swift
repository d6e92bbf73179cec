import InstantStore
import Synchronization

/// The lost changes a descriptor told the app of whose reports the layer keeps until every
/// ``InstantClient/events()`` stream has handed them over (``DeliveryReceipt``), by layer
/// file: a later round does not tell them again, and the document's state does not count
/// them.
///
/// Keyed by the layer file's key, not its name: a layer removed and downloaded again
/// numbers its changes from 1 anew.
final class ToldLostChanges: Sendable {
    private struct Layer {
        /// Told, waiting for the streams.
        var told: Set<Int64> = []
        /// Forgotten by a late forget, outside the sync lock: a round that read its rows
        /// before that forget must not take them for new ones.
        var forgotten: Set<Int64> = []
    }
    private let layers = Mutex<[String: Layer]>([:])

    /// The reports among `reports` (all the layer holds, as just read) neither told nor
    /// forgotten, now counted as told.
    func claim(_ reports: [LostChangeReport], layerKey: String) -> [LostChangeReport] {
        layers.withLock { layers in
            var layer = layers[layerKey, default: Layer()]
            // A number the read no longer holds needs no tombstone: numbers are not reused.
            if !layer.forgotten.isEmpty { layer.forgotten.formIntersection(reports.map(\.sequence)) }
            let fresh = reports.filter {
                !layer.forgotten.contains($0.sequence) && layer.told.insert($0.sequence).inserted
            }
            layers[layerKey] = layer.told.isEmpty && layer.forgotten.isEmpty ? nil : layer
            return fresh
        }
    }

    /// The reports numbered `sequences` were forgotten (`forgotten`), or are to be told
    /// again by a later round (the streams did not all hand them over, or forgetting them
    /// failed).
    func release(_ sequences: [Int64], layerKey: String, forgotten: Bool) {
        layers.withLock { layers in
            guard var layer = layers[layerKey] else { return }
            layer.told.subtract(sequences)
            if forgotten { layer.forgotten.formUnion(sequences) }
            layers[layerKey] = layer.told.isEmpty && layer.forgotten.isEmpty ? nil : layer
        }
    }

    /// Those told of the layer file `layerKey`, not forgotten yet.
    func sequences(layerKey: String) -> Set<Int64> {
        layers.withLock { $0[layerKey]?.told ?? [] }
    }
}
