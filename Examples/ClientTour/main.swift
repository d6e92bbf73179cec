// The client's flow, in the order of Nutrient's Instant guide, against a running server:
//
//   swift run instant-server serve --dev          # prints an API token and a client JWT
//   swift run client-tour --server http://127.0.0.1:5000 --api-token TOKEN --jwt JWT [--pdf FILE]
//
// It uploads a PDF for the JWT's document (through the server's API), then: a client and a
// descriptor for the JWT, the download (with its progress), an annotation added offline, a
// sync, a second client (its own store) listening and seeing a change of the first, a
// restart (the stored descriptor has no JWT: its sync asks for one, reauthenticate gives
// it), a re-download after removeLocalStorage() that moves no PDF byte, and the removal of
// the document's local storage and of the cache entries nothing uses. Each store is a
// temporary directory, removed at the end (a step that throws leaves them, named
// client-tour-*, in the temporary directory).
import AsyncHTTPClient
import Foundation
import Instant
import InstantProtocol
import NIOCore

func usage() -> Never {
    print("usage: client-tour --server URL --api-token TOKEN --jwt JWT [--pdf FILE]")
    exit(2)
}

var options: [String: String] = [:]
var arguments = Array(CommandLine.arguments.dropFirst())
while arguments.count >= 2 {
    options[arguments.removeFirst()] = arguments.removeFirst()
}
guard arguments.isEmpty, let server = options["--server"].flatMap(URL.init(string:)),
    let apiToken = options["--api-token"], let jwt = options["--jwt"]
else { usage() }

func step(_ text: String) { print("\n▸ " + text) }

/// The PDF: the file given, or a small one made here.
let pdf =
    try options["--pdf"].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
    ?? Data("%PDF-1.7\n1 0 obj <</Type /Catalog>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n".utf8)

// The JWT names its document; the server gets the PDF under that id.
let claims = try InstantJWT(parsing: jwt)
step("upload the PDF as document \"\(claims.documentID)\" (the server's API, with the API token)")
var upload = HTTPClientRequest(
    url: server.absoluteString + "/api/documents?document_id=\(PathEncoding.encode(claims.documentID))")
upload.method = .POST
upload.headers.add(name: "Authorization", value: "Token token=\"\(apiToken)\"")
upload.body = .bytes(ByteBuffer(bytes: pdf))
let uploaded = try await HTTPClient.shared.execute(upload, timeout: .seconds(60))
_ = try await uploaded.body.collect(upTo: 1 << 20)
print("  HTTP \(uploaded.status.code)")

let rootA = FileManager.default.temporaryDirectory.appendingPathComponent("client-tour-a-\(UUID())")
let rootB = FileManager.default.temporaryDirectory.appendingPathComponent("client-tour-b-\(UUID())")
defer {
    try? FileManager.default.removeItem(at: rootA)
    try? FileManager.default.removeItem(at: rootB)
}

step("InstantClient(serverURL:storeRoot:) and documentDescriptor(forJWT:)")
let client = try InstantClient(serverURL: server, storeRoot: rootA)
let events = Task {
    for await event in client.events() { print("  event: \(event)") }
}
let descriptor = try client.documentDescriptor(forJWT: jwt)
descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
print("  \(descriptor), state \(descriptor.documentState)")

step("download(usingJWT:)")
let download = try descriptor.download(usingJWT: jwt)
// A Foundation Progress: watch fractionCompleted, or cancel() it to cancel the download.
let progress = descriptor.downloadProgress
try await download.result()
print("  state \(descriptor.documentState), PDF bytes moved: \(descriptor.lastDownload?.pdfBytesTransferred ?? 0)")
if let progress {
    print("  downloadProgress: \(Int(progress.fractionCompleted * 100))%, finished \(progress.isFinished)")
}

step("editableDocument.add(_:) — offline, durable when it returns")
let note: JSONValue = [
    "v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [10, 10, 32, 32], "text": "Hello from Linux",
]
let added = try descriptor.editableDocument.add(note)
print("  \(added.id): synced \(added.isSynced), state \(descriptor.documentState)")

step("sync()")
try await descriptor.sync().result()
print("  state \(descriptor.documentState)")

step("a second client, its own store, listening for server changes")
let other = try InstantClient(serverURL: server, storeRoot: rootB)
let listener = try other.documentDescriptor(forJWT: jwt)
try await listener.download(usingJWT: jwt).result()
listener.startListeningForServerChanges()
let view = listener.readOnlyDocument()
print("  it sees \(try view.annotations().count) annotation(s)")

step("the first client edits and syncs; the listener's document follows")
try descriptor.editableDocument.update(
    added.id, content: ["text": "Edited", "v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [10, 10, 32, 32]])
try await descriptor.sync().result()
let deadline = Date().addingTimeInterval(10)
while try view.annotation(withID: added.id)?.content["text"] != "Edited", Date() < deadline {
    try await Task.sleep(for: .milliseconds(20))
}
if case .string(let text) = try view.annotation(withID: added.id)?.content["text"] {
    print("  the listener reads: \"\(text)\"")
} else {
    print("  the listener did not see the edit within 10 s")
    try? FileManager.default.removeItem(at: rootA)
    try? FileManager.default.removeItem(at: rootB)
    exit(1)
}
listener.stopListeningForServerChanges()

step("after a restart: localDocumentDescriptors() (JWTs are never stored), a sync, reauthenticate(withJWT:)")
let restarted = try InstantClient(serverURL: server, storeRoot: rootA)
guard let stored = try restarted.localDocumentDescriptors()[claims.documentID]?.first else {
    print("  the store lists no descriptor for \"\(claims.documentID)\"")
    exit(1)
}
print("  \(stored): no JWT")
let restartedEvents = restarted.events()
// As on iOS after launch, the first sync reports didFailAuthentication: the app asks its
// server for a JWT and gives it (here, the same one).
do {
    try await stored.sync().result()
} catch {
    print("  sync(): \(error)")
}
stored.reauthenticate(withJWT: jwt)
reauthentication: for await event in restartedEvents {
    switch event {
    case .didFailAuthentication: print("  event: didFailAuthentication")
    case .didFinishReauthentication:
        print("  event: didFinishReauthentication (the app may keep the JWT now, in its keychain)")
    case .didFinishSync:
        // The sync a reauthentication starts.
        print("  event: didFinishSync, state \(stored.documentState)")
        break reauthentication
    case .didFailReauthentication(_, let error), .didFailSync(_, let error):
        print("  event: \(event), \(error)")
        exit(1)
    default: continue
    }
}

step("removeLocalStorage(), then download again: the PDF is still in the store")
try descriptor.removeLocalStorage()
print("  state \(descriptor.documentState)")
try await descriptor.download(usingJWT: jwt).result()
print("  state \(descriptor.documentState), PDF bytes moved: \(descriptor.lastDownload?.pdfBytesTransferred ?? 0)")

step("removeLocalStorage(forDocumentIdentifier:), then removeUnreferencedCacheEntries()")
try client.removeLocalStorage(forDocumentIdentifier: claims.documentID)
print("  the descriptor is \(descriptor.documentState) (get a new one to download again)")
let purged = try client.removeUnreferencedCacheEntries()
print("  cache entries purged: \(purged.sorted()), left: \(try client.listCacheEntries().count)")

events.cancel()
withExtendedLifetime((client, other, restarted)) {}
print("\ndone")
