/// Aligned columns: text left, numbers right, two spaces between, header in bold on a
/// terminal. Widths count characters, so identifiers in any script line up.
///
/// ```swift
/// var table = Table(["TENANT", "BYTES"], rightAligned: [1])
/// table.add(["https://a.example.com", "1.2 MiB"])
/// print(table.render(colour: false))
/// ```
struct Table {
    /// A cell's text and, optionally, a style applied after alignment.
    struct Cell: ExpressibleByStringLiteral {
        var text: String
        var style: ((String) -> String)?

        init(_ text: String, style: ((String) -> String)? = nil) {
            self.text = text
            self.style = style
        }

        init(stringLiteral value: String) { self.init(value) }
    }

    private let header: [String]
    private let rightAligned: Set<Int>
    private var rows: [[Cell]] = []
    private var widths: [Int]

    init(_ header: [String], rightAligned: Set<Int> = []) {
        self.header = header
        self.rightAligned = rightAligned
        widths = header.map(\.count)
    }

    var isEmpty: Bool { rows.isEmpty }

    mutating func add(_ row: [Cell]) {
        for (index, cell) in row.enumerated() where index < widths.count {
            widths[index] = max(widths[index], Table.width(cell.text))
        }
        rows.append(row)
    }

    /// The table as lines; without the header when `header` is false.
    func render(colour: Bool, header showHeader: Bool = true) -> String {
        var lines: [String] = []
        lines.reserveCapacity(rows.count + 1)
        if showHeader {
            let line = line(header.map { Cell($0) }, colour: false)
            lines.append(colour ? Style.bold(line) : line)
        }
        for row in rows { lines.append(line(row, colour: colour)) }
        return lines.joined(separator: "\n")
    }

    /// Characters on screen; counting bytes when the text is ASCII (the common case) is
    /// much cheaper than counting grapheme clusters.
    static func width(_ text: String) -> Int {
        let utf8 = text.utf8
        return utf8.allSatisfy { $0 < 0x80 } ? utf8.count : text.count
    }

    private func line(_ row: [Cell], colour: Bool) -> String {
        var line = ""
        for (index, cell) in row.enumerated() {
            let padding = String(repeating: " ", count: max(0, widths[index] - Table.width(cell.text)))
            let text = colour ? (cell.style?(cell.text) ?? cell.text) : cell.text
            if index > 0 { line += "  " }
            if rightAligned.contains(index) {
                line += padding + text
            } else if index == row.count - 1 {
                line += text  // no trailing spaces
            } else {
                line += text + padding
            }
        }
        return line
    }
}
