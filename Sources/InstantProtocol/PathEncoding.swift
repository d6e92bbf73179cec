/// How identifiers go into paths and queries (docs/PROTOCOL.md): every byte of their UTF-8
/// except `A–Z a–z 0–9 - . _ ~` is percent-encoded, so `a/b` becomes `a%2Fb` and `é`
/// becomes `%C3%A9`. An identifier that is exactly `.` or `..` has its dots encoded too
/// (`%2E`): as a path segment, a URL library or a proxy would otherwise resolve it away
/// (`/documents/../pdf` is `/pdf`), and the request would reach another route.
///
/// ```swift
/// let path = "/i/v1/documents/\(PathEncoding.encode("reports/2026"))/pdf"
/// ```
public enum PathEncoding {
    public static func encode(_ text: String) -> String {
        if text == "." || text == ".." { return String(repeating: "%2E", count: text.count) }
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                result.unicodeScalars.append("%")
                result.unicodeScalars.append(hex[Int(byte >> 4)])
                result.unicodeScalars.append(hex[Int(byte & 0xF)])
            }
        }
        return result
    }
}
