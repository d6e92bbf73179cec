/// What a `Range` request header asks of a representation of `size` bytes, by RFC 9110
/// §14: one satisfiable range (206), nothing satisfiable (416), or something to ignore
/// (200 with the whole body): several ranges, another unit, a reversed or malformed range.
///
/// ```swift
/// switch ByteRange.parse("bytes=0-99", size: 1_000) {
/// case .range(let range): …        // 0..<100
/// case .unsatisfiable: …           // 416 with Content-Range: bytes */1000
/// case .ignored: …                 // 200, the whole representation
/// }
/// ```
///
/// Positions are parsed as digits only and clipped to the size before any arithmetic, so
/// no value a client sends can overflow.
enum ByteRange: Equatable, Sendable {
    case range(Range<Int64>)
    case unsatisfiable
    case ignored

    static func parse(_ header: String, size: Int64) -> ByteRange {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.utf8.count <= 1024, trimmed.lowercased().hasPrefix("bytes=") else { return .ignored }
        let spec = trimmed.dropFirst("bytes=".count)
        // Several ranges: the server may ignore the field (RFC 9110 §14.2) and it does.
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .ignored }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            // bytes=-n: the last n bytes (all of them when n exceeds the size).
            guard let suffix = position(last) else { return .ignored }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .range(max(0, size - min(suffix, size))..<size)
        }
        guard let start = position(first) else { return .ignored }
        if last.isEmpty { return start < size ? .range(start..<size) : .unsatisfiable }
        guard let end = position(last) else { return .ignored }
        // A last position before the first makes the range-spec invalid: ignored.
        guard end >= start else { return .ignored }
        guard start < size else { return .unsatisfiable }
        return .range(start..<(min(end, size - 1) + 1))
    }

    /// A position: ASCII digits only; values past Int64 saturate (they are clipped to
    /// the size anyway). Nil for anything else (a sign, a space inside, nothing).
    private static func position(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        var value: Int64 = 0
        for digit in text.utf8 {
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(Int64(digit - 48))
            if overflowTimes || overflowSum { return .max }
            value = sum
        }
        return value
    }
}
