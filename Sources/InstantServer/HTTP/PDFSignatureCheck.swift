import Foundation
import InstantProtocol

/// An upload's bytes as they arrive, refused unless they hold a PDF's header (`%PDF-`)
/// within their first 1024 bytes, where PDF readers look for it. An operator who uploads
/// the wrong file (a `.docx`, an HTML error page saved as `.pdf`) learns it at once,
/// rather than every client downloading bytes no viewer opens. The bytes pass through
/// unchanged; the refusal ends the ingest, which then stores nothing.
///
/// ```swift
/// try await store.ingestPDF(tenant: tenant, document: name, chunks: PDFSignatureCheck(body))
/// ```
struct PDFSignatureCheck<Base: AsyncSequence>: AsyncSequence where Base.Element: ContiguousBytes {
    typealias Element = Base.Element
    /// How far in the header may be (PDF 2.0, annex H: readers accept it within 1024 bytes).
    static var window: Int { 1024 }
    let base: Base

    init(_ base: Base) { self.base = base }

    struct AsyncIterator: AsyncIteratorProtocol {
        var inner: Base.AsyncIterator
        /// The first bytes, until the header is found in them.
        var head: [UInt8] = []
        var found = false

        mutating func next() async throws -> Element? {
            guard let chunk = try await inner.next() else {
                // An empty body is the store's to refuse (emptyPDF); a short one is checked.
                if !found && !head.isEmpty { throw PDFSignatureCheck.refusal }
                return nil
            }
            if !found {
                chunk.withUnsafeBytes { bytes in
                    head.append(contentsOf: bytes.prefix(PDFSignatureCheck.window - head.count))
                }
                found = head.firstRange(of: Array("%PDF-".utf8)) != nil
                if !found && head.count >= PDFSignatureCheck.window { throw PDFSignatureCheck.refusal }
            }
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(inner: base.makeAsyncIterator()) }

    static var refusal: ProtocolError {
        ProtocolError(
            .invalidRequest,
            "not a PDF: its first \(window) bytes hold no PDF header (%PDF-); nothing was stored")
    }
}

extension PDFSignatureCheck: Sendable where Base: Sendable {}
