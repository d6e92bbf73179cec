import Foundation
import InstantProtocol
import InstantStore

extension SyncRound {
    /// Tells the app of the lost changes `layer` keeps (``LostChangeReport``): a round's,
    /// and any that a process killed before it told the app left behind, each with what won
    /// (the server's version when it was dropped), in order, as `descriptor`'s. No server
    /// is needed.
    ///
    /// They are forgotten once the app has them: at once when no ``InstantClient/events()``
    /// stream is open (the delegate and notifications are called before this returns),
    /// otherwise when every open stream's consumer is done with them (has asked for the
    /// next event, or stopped after taking them). A process killed before that
    /// tells them again rather than never; meanwhile this descriptor does not tell them
    /// again (``ToldLostChanges``). A stream that ends without handing them over (its
    /// consumer cancelled) leaves them to be told again by a later round.
    static func reportLostChanges(
        in layer: LayerDatabase, of descriptor: InstantDocumentDescriptor, client: InstantClient
    ) async throws {
        let told = descriptor.toldLostChanges
        let reports = told.claim(try await Offload.run { try layer.lostChangeReports() }, layerKey: layer.key)
        guard !reports.isEmpty else { return }
        let receipt = DeliveryReceipt()
        for report in reports {
            let change = InstantLostChange(
                annotationID: report.annotationID,
                kind: InstantLostChange.Kind(rawValue: report.kind.rawValue) ?? .update,
                lostContent: report.content.flatMap { try? JSONValue.parse($0) },
                reason: InstantLostChange.Reason(rawValue: report.reason) ?? .conflict, message: report.message,
                winner: report.winner.flatMap { try? JSONValue.parse($0) })
            client.emit(.didLoseChange(descriptor, change), receipt: receipt)
        }
        // The delegate and notifications have them before this goes on, also when another
        // thread was handing events out.
        await client.eventsDelivered()
        let sequences = reports.map(\.sequence)
        let (store, tenant, document, name) = (client.store, client.tenant, descriptor.identifier, descriptor.layerName)
        let settle = { @Sendable (delivered: Bool) throws in
            var forgotten = false
            // Released either way: forgotten, or told again by a later round.
            defer { told.release(sequences, layerKey: layer.key, forgotten: forgotten) }
            guard delivered else { return }
            do {
                try layer.forgetLostChangeReports(sequences)
            } catch {
                // The handle was closed meanwhile (the client released, say): the same file
                // through a handle of its own, if it is still the layer's.
                let fresh = try store.openLayer(tenant: tenant, document: document, layer: name)
                defer { fresh.close() }
                guard fresh.key == layer.key else { throw error }
                try fresh.forgetLostChangeReports(sequences)
            }
            forgotten = true
        }
        let settled = receipt.seal { delivered in
            do { try await Offload.run { try settle(delivered) } } catch {
                // Kept in the layer (or gone with it): a later round tells them again.
            }
        }
        if let settled { try await Offload.run { try settle(settled) } }
    }
}
