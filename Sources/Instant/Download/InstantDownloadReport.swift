/// What a finished download moved: see ``InstantDocumentDescriptor/lastDownload``.
///
/// ```swift
/// try await descriptor.download(usingJWT: jwt).result()
/// if descriptor.lastDownload?.pdfBytesTransferred == 0 { print("the PDF was in the store already") }
/// ```
public struct InstantDownloadReport: Sendable, Equatable {
    /// PDF bytes that came over the network: 0 when the store already held the PDF intact
    /// (another layer of the document, another document or server with the same PDF, a
    /// download after `removeLocalStorage()`); more than the PDF's size when a broken
    /// transfer had to be resumed.
    public var pdfBytesTransferred: Int64
    /// The annotations the layer's snapshot held.
    public var annotationCount: Int
}
