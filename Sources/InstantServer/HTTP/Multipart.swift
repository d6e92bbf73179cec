import Foundation
import InstantProtocol

/// A minimal `multipart/form-data` reader (RFC 7578) for document uploads: the parts'
/// names, file names and bytes.
struct MultipartForm {
    struct Part {
        var name: String
        var filename: String?
        var body: Data
    }

    var parts: [Part]

    /// The boundary of a `multipart/form-data` content type, or nil for another type.
    static func boundary(contentType: String) -> String? {
        let pieces = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard pieces.first?.lowercased() == "multipart/form-data" else { return nil }
        for piece in pieces.dropFirst() where piece.lowercased().hasPrefix("boundary=") {
            var value = piece.dropFirst("boundary=".count)
            if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 {
                value = value.dropFirst().dropLast()
            }
            return value.isEmpty ? nil : String(value)
        }
        return nil
    }

    /// Parses `body`; throws `invalidRequest` saying what is malformed.
    init(body: Data, boundary: String) throws(ProtocolError) {
        let delimiter = Data("--\(boundary)".utf8)
        let crlf = Data("\r\n".utf8)
        let headerEnd = Data("\r\n\r\n".utf8)
        guard var cursor = body.range(of: delimiter)?.upperBound else {
            throw ProtocolError(.invalidRequest, "the multipart body has no boundary line")
        }
        var parts: [Part] = []
        while true {
            // After a delimiter: "--" ends the body, CRLF starts a part.
            if body[cursor...].starts(with: Data("--".utf8)) { break }
            guard body[cursor...].starts(with: crlf) else {
                throw ProtocolError(.invalidRequest, "a multipart boundary is not followed by a line break")
            }
            cursor += 2
            guard let headersRange = body.range(of: headerEnd, in: cursor..<body.endIndex) else {
                throw ProtocolError(.invalidRequest, "a multipart part has no end to its headers")
            }
            let headers = String(decoding: body[cursor..<headersRange.lowerBound], as: UTF8.self)
            let contentStart = headersRange.upperBound
            guard let next = body.range(of: crlf + delimiter, in: contentStart..<body.endIndex) else {
                throw ProtocolError(.invalidRequest, "a multipart part is not closed by the boundary")
            }
            var part = Part(name: "", filename: nil, body: body[contentStart..<next.lowerBound])
            for line in headers.components(separatedBy: "\r\n")
            where line.lowercased().hasPrefix("content-disposition:") {
                part.name = Self.parameter("name", in: line) ?? ""
                part.filename = Self.parameter("filename", in: line)
            }
            parts.append(part)
            cursor = next.upperBound
        }
        self.parts = parts
    }

    /// The part called `name`.
    subscript(name: String) -> Part? { parts.first { $0.name == name } }

    private static func parameter(_ key: String, in line: String) -> String? {
        for piece in line.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespaces) })
        where piece.hasPrefix("\(key)=") {
            var value = piece.dropFirst(key.count + 1)
            if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 {
                value = value.dropFirst().dropLast()
            }
            return String(value)
        }
        return nil
    }
}
