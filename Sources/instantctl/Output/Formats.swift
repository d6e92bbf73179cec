import Foundation
import InstantStore

/// How values read to people.
enum Formats {
    /// Bytes in binary units: `512 B`, `1.5 KiB`, `12.3 MiB`, `2.0 GiB`.
    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(count)
        var unit = 0
        while abs(value) >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(count) B" }
        // Integer arithmetic: String(format:) cost a third of a 100,000-line listing.
        if value < 9.95 {
            let tenths = Int((value * 10).rounded())
            return "\(tenths / 10).\(tenths % 10) \(units[unit])"
        }
        return "\(Int(value.rounded())) \(units[unit])"
    }

    /// A past moment relative to `now`: `just now`, `5 min ago`, `3 h ago`, `12 days ago`,
    /// then the date.
    static func age(_ date: Date, now: Date) -> String {
        let seconds = now.timeIntervalSince(date)
        switch seconds {
        case ..<60: return "just now"
        case ..<3600: return "\(Int(seconds / 60)) min ago"
        case ..<86400: return "\(Int(seconds / 3600)) h ago"
        case ..<(86400 * 60): return "\(Int(seconds / 86400)) days ago"
        default: return date.iso8601Day
        }
    }

    /// An identifier as it prints: control characters and the like escaped, so a hostile
    /// name cannot move the cursor or forge a line.
    static func identifier(_ text: String) -> String {
        // Fast path on the bytes: C0 controls, DEL, and C1 controls (UTF-8 C2 80…C2 9F).
        var previous: UInt8 = 0
        let clean = text.utf8.allSatisfy { byte in
            defer { previous = byte }
            return byte >= 0x20 && byte != 0x7F && !(previous == 0xC2 && byte >= 0x80 && byte <= 0x9F)
        }
        if clean { return text }
        return text.unicodeScalars.map { $0.escaped(asASCII: false) }.joined()
    }

    /// `identifier` with every character outside ASCII written as its code points
    /// (`caf\u{E9}`): how two spellings that print alike are told apart.
    static func codePoints(_ identifier: String) -> String {
        identifier.unicodeScalars.map { $0.escaped(asASCII: true) }.joined()
    }

    /// A hint for an identifier matching nothing by its bytes, when one of `stored` is the
    /// same text spelled otherwise (canonically equivalent Unicode: `é` as one code point,
    /// or `e` and a combining accent), which the store and servers count as another id.
    static func otherSpellingHint(of identifier: String, among stored: some Sequence<String>) -> String {
        guard let other = stored.first(where: { $0 == identifier && !$0.hasSameBytes(as: identifier) }) else {
            return ""
        }
        return "; the store holds \(codePoints(other)), the same text spelled with other code points than"
            + " \(codePoints(identifier)), which is another identifier: pass it spelled as stored"
    }

    /// The default layer has no name; it prints as `(default)`.
    static func layer(_ name: String) -> String { name.isEmpty ? "(default)" : identifier(name) }

    /// `3 layers`, `1 layer`.
    static func count(_ value: Int, _ noun: String) -> String { "\(value) \(noun)\(value == 1 ? "" : "s")" }
}

extension Date {
    /// `2026-11-22T21:43:14Z`, built by hand: `formatted(.iso8601)` dominated `ls --json`.
    var iso8601: String {
        let parts = utc
        return "\(iso8601Day(parts))T\(Date.two(parts.tm_hour)):\(Date.two(parts.tm_min)):\(Date.two(parts.tm_sec))Z"
    }

    /// `2026-11-22` (UTC), built by hand like ``iso8601``.
    var iso8601Day: String { iso8601Day(utc) }

    private var utc: tm {
        var seconds = time_t(timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return parts
    }

    private func iso8601Day(_ parts: tm) -> String {
        "\(parts.tm_year + 1900)-\(Date.two(parts.tm_mon + 1))-\(Date.two(parts.tm_mday))"
    }

    private static func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

extension LayerReference {
    /// `https://a.example.com  doc-1  (default)` for lists.
    var display: String {
        "\(tenant)  \(Formats.identifier(document))  \(Formats.layer(layer))"
    }
}
