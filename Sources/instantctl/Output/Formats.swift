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
        return String(format: value < 10 ? "%.1f %@" : "%.0f %@", value, units[unit])
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
        default: return date.formatted(.iso8601.year().month().day())
        }
    }

    /// An identifier as it prints: control characters and the like escaped, so a hostile
    /// name cannot move the cursor or forge a line.
    static func identifier(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "\u{7F}" })
        else { return text }
        return text.unicodeScalars.map { $0.escaped(asASCII: false) }.joined()
    }

    /// The default layer has no name; it prints as `(default)`.
    static func layer(_ name: String) -> String { name.isEmpty ? "(default)" : identifier(name) }

    /// `3 layers`, `1 layer`.
    static func count(_ value: Int, _ noun: String) -> String { "\(value) \(noun)\(value == 1 ? "" : "s")" }
}

extension LayerReference {
    /// `https://a.example.com  doc-1  (default)` for lists.
    var display: String {
        "\(tenant)  \(Formats.identifier(document))  \(Formats.layer(layer))"
    }
}
