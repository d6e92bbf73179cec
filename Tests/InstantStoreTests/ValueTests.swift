import Crypto
import Foundation
import Testing

@testable import InstantStore

/// The small value types the listings lean on.
@Suite struct ValueTests {
    @Test func blobHashReadsHexETagsAndDigestsAlike() throws {
        let data = Data("hello".utf8)
        let digest = BlobHash.of(data)
        let hex = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        #expect(digest.hex == hex)
        #expect(digest.description == hex)
        #expect(BlobHash(hex: hex) == digest)
        #expect(BlobHash(hex: hex.uppercased()) == digest)
        #expect(BlobHash(hex: "\"\(hex)\"") == digest)
        #expect(BlobHash(hex: "W/\"\(hex)\"") == digest)
        for bad in ["", String(hex.dropLast()), hex + "0", String(hex.dropLast()) + "g", "\"\(hex)", hex + " "] {
            #expect(BlobHash(hex: bad) == nil, "\(bad)")
        }
        // Column bytes parse the same way.
        let parsed = Array(hex.utf8).withUnsafeBytes { BlobHash(hexDigits: $0) }
        #expect(parsed == digest)
    }

    @Test func blobHashOrderAndHashingFollowTheHexText() throws {
        let hashes = (0..<200).map { BlobHash.of(Data("pdf \($0)".utf8)) }
        #expect(hashes.sorted().map(\.hex) == hashes.map(\.hex).sorted())
        #expect(Set(hashes).count == 200)
        #expect(Set(hashes.map { BlobHash(hex: $0.hex.uppercased()) }).count == 200)
        let encoded = try JSONEncoder().encode(hashes)
        #expect(try JSONDecoder().decode([BlobHash].self, from: encoded) == hashes)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(BlobHash.self, from: Data(#""abc""#.utf8)) }
    }

    @Test(arguments: [false, true]) func rowIDMapDenseOrSparse(sparse: Bool) {
        // Sparse: ids spread far wider than the rows (most deleted), so a dictionary.
        let ids: [Int64] = sparse ? (0..<100).map { 1 + $0 * 1_000_000 } : Array(5...104)
        var map = RowIDMap<String>(ids: ids[0]...ids[ids.count - 1], count: ids.count)
        for id in ids { map[id] = "row \(id)" }
        #expect(ids.allSatisfy { map[$0] == "row \($0)" })
        #expect(map[ids[0] - 1] == nil && map[ids[ids.count - 1] + 1] == nil && map[Int64.min] == nil)
        map[ids[3]] = nil
        #expect(map[ids[3]] == nil && map[ids[4]] == "row \(ids[4])")
    }
}

/// docs/STORE.md lists every error code and every kind of problem verify reports.
@Suite struct DocumentedCodesTests {
    static let storeMarkdown: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("docs/STORE.md"), encoding: .utf8)) ?? ""
    }()

    /// One of each case of ``StoreError``: add a new case here when adding it there.
    static let everyError: [StoreError] = [
        .io(operation: "", path: "", errno: 0), .diskFull(path: ""), .hashMismatch(expected: "", actual: ""),
        .sizeMismatch(expected: 0, actual: 0), .corruptBlob(sha256: "", reason: ""), .noSuchBlob(sha256: ""),
        .corruptLayer(key: "", reason: ""), .layerRemoved(document: "", layer: ""),
        .noSuchDocument(tenant: "", document: ""), .noSuchLayer(tenant: "", document: "", layer: ""),
        .documentHasNoPDF(tenant: "", document: ""), .layerAlreadyExists(document: "", layer: ""),
        .noSuchAnnotation(id: ""), .annotationAlreadyExists(id: ""), .invalidAnnotationContent(reason: ""),
        .invalidIdentifier(reason: ""), .invalidServerURL(""), .catalogCorrupt(reason: ""),
        .unsupportedFormatVersion(file: "", found: "", supported: ""), .database(extendedCode: 0, message: ""),
        .busy(path: ""), .compression(reason: ""), .pendingChanges(layers: 0, changes: 0), .nothingStored(tenant: ""),
        .ambiguousDocument(document: "", tenants: []), .emptyPDF, .originStore(path: ""),
        .layerUnreadable(layer: "", reason: ""), .noSuchQuarantinedFile(name: ""), .cannotRestore(name: "", reason: ""),
    ]

    @Test func everyErrorCodeIsDocumented() {
        #expect(!Self.storeMarkdown.isEmpty)
        #expect(Set(Self.everyError.map(\.code)).count == Self.everyError.count, "one code per case")
        for error in Self.everyError {
            #expect(Self.storeMarkdown.contains("`\(error.code)`"), "\(error.code) is not in docs/STORE.md")
            #expect(!error.description.isEmpty)
        }
    }

    @Test func everyProblemKindIsDocumented() {
        for kind in Problem.Kind.allCases {
            #expect(Self.storeMarkdown.contains("`\(kind.rawValue)`"), "\(kind.rawValue) is not in docs/STORE.md")
        }
    }
}
