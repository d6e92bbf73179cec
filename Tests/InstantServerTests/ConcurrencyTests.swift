import Foundation
import InstantProtocol
import Testing
import ServerTestSupport

@Suite struct ConcurrencyTests {
    /// 50 clients sync one layer at once, each creating its own annotation and updating a
    /// shared one. Revisions strictly increase, no accepted change is lost, and after one
    /// more sync every client holds exactly the server's records.
    @Test func fiftyClientsSyncingOneLayer() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let seed = try await server.token(document: "d", user: "seed")
            let seeded = try await server.sync(
                "d", token: seed,
                SyncRequest(
                    clientId: "seed-0123456789abcdef", baseRevision: 0,
                    changes: [ClientChange(changeId: 0, kind: .create, id: "shared", content: annotation("s"))]))
            let clients = 50
            let responses = try await withThrowingTaskGroup(of: (Int, SyncResponse).self) { group in
                for index in 0..<clients {
                    group.addTask {
                        let token = try await server.token(document: "d", user: "u\(index)")
                        let response = try await server.sync(
                            "d", token: token,
                            SyncRequest(
                                clientId: "u\(index)-0123456789abcdef", epoch: seeded.epoch, baseRevision: 1,
                                changes: [
                                    ClientChange(
                                        changeId: 1, kind: .create, id: "own-\(index)", content: annotation("\(index)")),
                                    ClientChange(
                                        changeId: 2, kind: .update, id: "shared", content: annotation("by \(index)")),
                                ]))
                        return (index, response)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Every sync took its own revision (its response may also show later ones, read
            // after it committed); exactly one shared update won.
            let revisions = responses.compactMap { index, response in
                response.changes.first { $0.id == "own-\(index)" }.map { change in
                    #expect(response.revision >= change.revision)
                    return change.revision
                }
            }.sorted()
            #expect(revisions == Array(2...Int64(clients + 1)))
            #expect(responses.allSatisfy { $0.1.results.first?.accepted == true })
            let winners = responses.filter { $0.1.results.last?.accepted == true }
            #expect(winners.count == 1)
            #expect(responses.filter { $0.1.results.last?.reason == .conflict }.count == clients - 1)

            // One more sync each: every client converges on the server's records.
            let truth = try await server.client(.GET, "d", "snapshot", token: seed).json(LayerSnapshot.self)
            #expect(truth.records.count == clients + 1)
            #expect(truth.records.first { $0.id == "shared" }?.content["text"] == .string("by \(winners[0].0)"))
            for (index, response) in responses {
                // The client's view: everything it learned, then what it learns now.
                var view: [String: JSONValue] = ["shared": annotation("s")]
                for change in response.changes { view[change.id] = change.content }
                let token = try await server.token(document: "d", user: "u\(index)")
                let next = try await server.sync(
                    "d", token: token,
                    SyncRequest(
                        clientId: "u\(index)-0123456789abcdef", epoch: response.epoch, baseRevision: response.revision,
                        changes: []))
                for change in next.changes { view[change.id] = change.deleted ? nil : change.content }
                #expect(next.revision == truth.revision)
                #expect(view == Dictionary(uniqueKeysWithValues: truth.records.map { ($0.id, $0.content) }))
            }
        }
    }
}
