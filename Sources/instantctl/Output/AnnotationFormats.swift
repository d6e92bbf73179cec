import Foundation
import Instant
import InstantProtocol

extension Formats {
    /// An annotation in one line: its type without the `pspdfkit/` prefix, its page (from
    /// 1), and the start of its text: `note, page 1, "Check this"`.
    static func annotation(_ content: JSONValue?) -> String {
        guard let content else { return "" }
        var parts: [String] = []
        if let type = annotationType(content) { parts.append(type) }
        if let page = annotationPage(content) { parts.append("page \(page)") }
        let text = annotationText(content, length: 40)
        if !text.isEmpty { parts.append("\"\(text)\"") }
        return parts.joined(separator: ", ")
    }

    /// The type without the `pspdfkit/` prefix (`note`), escaped for printing.
    static func annotationType(_ content: JSONValue) -> String? {
        content["type"]?.string.map { identifier($0.hasPrefix("pspdfkit/") ? String($0.dropFirst(9)) : $0) }
    }

    /// The page, counted from 1.
    static func annotationPage(_ content: JSONValue) -> Int64? {
        if case .integer(let index)? = content["pageIndex"] { index + 1 } else { nil }
    }

    /// The first line of the text (plain, or a text annotation's `value`), cut to `length`
    /// characters with `…`, escaped for printing; empty when there is none.
    static func annotationText(_ content: JSONValue, length: Int) -> String {
        let text = content["text"]?.string ?? content["text"]?["value"]?.string ?? ""
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return identifier(line.count > length ? String(line.prefix(length - 1)) + "…" : line)
    }

    /// A local change the server did not take, and what it kept instead:
    /// `welcome: your update lost (conflict); the server kept note, page 1, "Ana's"`. A
    /// lost create or update adds a second line with its whole content, as one line of
    /// Instant JSON: once told, the store forgets a lost change, and this is the only copy
    /// left to put back (`instantctl annotations update ID --file -`, or `add` when the
    /// server kept none).
    static func lostChange(_ lost: InstantLostChange) -> String {
        "\(identifier(lost.annotationID)): your \(lost.kind.rawValue) lost (\(lost.reason.rawValue)); the server kept "
            + (lost.winner.map { annotation($0) } ?? "no such annotation")
            + (lost.lostContent.map { "\n  your content: " + jsonLine($0) } ?? "")
    }

    /// Compact JSON on one line that steers no terminal: JSON escapes the C0 controls
    /// itself, and DEL and the C1 controls (which it may leave as they are) are escaped too.
    static func jsonLine(_ value: JSONValue) -> String {
        String(decoding: value.jsonData(), as: UTF8.self).unicodeScalars.map { scalar in
            (0x7F...0x9F).contains(scalar.value) ? String(format: "\\u%04X", scalar.value) : String(scalar)
        }.joined()
    }

    /// The same as JSON.
    static func lostChangeJSON(_ lost: InstantLostChange) -> JSONValue {
        .object([
            "annotation": .string(lost.annotationID), "kind": .string(lost.kind.rawValue),
            "reason": .string(lost.reason.rawValue), "message": lost.message.map { .string($0) } ?? .null,
            "lostContent": lost.lostContent ?? .null, "winner": lost.winner ?? .null,
        ])
    }

    /// The time of day, `14:03:27` (UTC), for lines of a running command.
    static func clock(_ date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970) % 86400
        return [seconds / 3600, seconds / 60 % 60, seconds % 60].map { $0 < 10 ? "0\($0)" : "\($0)" }
            .joined(separator: ":")
    }
}

extension JSONValue {
    /// Indented JSON with sorted keys, for people (scripts get `--json`, compact and exact).
    var prettyText: String {
        let compact = jsonData()
        guard let object = try? JSONSerialization.jsonObject(with: compact, options: [.fragmentsAllowed]),
            let pretty = try? JSONSerialization.data(
                withJSONObject: object,
                options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        else { return String(decoding: compact, as: UTF8.self) }
        return String(decoding: pretty, as: UTF8.self)
    }
}
