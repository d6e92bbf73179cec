/// Aligned columns: text left, numbers right, two spaces between, header in bold on a
/// terminal. Widths count characters, so identifiers in any script line up.
///
/// ```swift
/// var table = Table(["TENANT", "BYTES"], rightAligned: [1])
/// table.add(["https://a.example.com", "1.2 MiB"])
/// table.render(colour: false) { output.print(lines: $0) }
/// ```
///
/// Built for 100,000-line listings: cells are appended row by row into one byte buffer
/// (no `String` kept per cell), and the table renders into another.
struct Table {
    /// A cell's text and, optionally, a style applied after alignment.
    struct Cell: ExpressibleByStringLiteral {
        var text: String
        var style: Style?

        init(_ text: String, style: Style? = nil) {
            self.text = text
            self.style = style
        }

        init(stringLiteral value: String) { self.init(value) }
    }

    /// Where a cell's text ends in `text`, its width on screen and its style.
    private struct Stored {
        var end: Int
        var width: Int32
        var style: Style?
    }

    private let header: [String]
    private let rightAligned: [Bool]
    /// Every cell's UTF-8, one after another, row by row.
    private var text: [UInt8] = []
    private var cells: [Stored] = []
    private var widths: [Int]
    /// The column the next appended cell goes in.
    private var column = 0

    init(_ header: [String], rightAligned: Set<Int> = []) {
        self.header = header
        self.rightAligned = header.indices.map { rightAligned.contains($0) }
        widths = header.map { Table.width($0) }
    }

    var isEmpty: Bool { cells.isEmpty }

    /// Makes room for `count` more rows.
    mutating func reserve(rows count: Int) {
        cells.reserveCapacity(cells.count + count * widths.count)
        text.reserveCapacity(text.count + count * widths.count * 12)
    }

    /// Adds a row: one cell per column, missing cells left empty, extra ones dropped.
    mutating func add(_ row: [Cell]) {
        for index in widths.indices {
            if index < row.count { append(row[index].text, style: row[index].style) } else { append("") }
        }
    }

    /// Adds the next cell, row by row, left to right. Cheaper than ``add(_:)`` for long
    /// tables: no array per row.
    mutating func append(_ cell: String, style: Style? = nil) {
        var cell = cell
        let isASCII = cell.withUTF8 { utf8 in
            text.append(contentsOf: utf8)
            return utf8.allSatisfy { $0 < 0x80 }
        }
        let width = Table.width(cell, isASCII: isASCII)
        widths[column] = max(widths[column], width)
        cells.append(Stored(end: text.count, width: Int32(clamping: width), style: style))
        column = column + 1 == widths.count ? 0 : column + 1
    }

    /// Renders the table as UTF-8 lines (each ending in a newline; without the header when
    /// `header` is false) in pieces of about 64 KiB, each a whole number of lines, handing
    /// each to `write` as it is ready: memory stays flat however long the table.
    func render(colour: Bool, header showHeader: Bool = true, _ write: ([UInt8]) -> Void) {
        let columns = widths.count
        let chunk = 1 << 16
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chunk + widths.reduce(0, +) + 2 * columns + 64)
        if showHeader {
            var line: [UInt8] = []
            for (column, title) in header.enumerated() {
                let utf8 = Array(title.utf8)
                let stored = Stored(end: utf8.count, width: Int32(Table.width(title)), style: nil)
                utf8.withUnsafeBufferPointer { append(stored, $0, column: column, colour: false, to: &line) }
            }
            let title = String(decoding: line, as: UTF8.self)
            bytes.append(contentsOf: (colour ? Style.bold(title) : title).utf8)
            bytes.append(UInt8(ascii: "\n"))
        }
        text.withUnsafeBufferPointer { text in
            var start = 0
            var column = 0
            for cell in cells {
                append(
                    cell, UnsafeBufferPointer(rebasing: text[start..<cell.end]), column: column, colour: colour,
                    to: &bytes)
                start = cell.end
                column += 1
                if column == columns {
                    column = 0
                    bytes.append(UInt8(ascii: "\n"))
                    if bytes.count >= chunk {
                        write(bytes)
                        bytes.removeAll(keepingCapacity: true)
                    }
                }
            }
        }
        if !bytes.isEmpty { write(bytes) }
    }

    /// Characters on screen; counting bytes when the text is ASCII (the common case) is
    /// much cheaper than counting grapheme clusters.
    private static func width(_ text: String) -> Int {
        width(text, isASCII: text.utf8.allSatisfy { $0 < 0x80 })
    }

    private static func width(_ text: String, isASCII: Bool) -> Int { isASCII ? text.utf8.count : text.count }

    /// One cell, padded to its column: left-aligned cells on the right (except in the
    /// last column: no trailing spaces), right-aligned ones on the left.
    private func append(
        _ cell: Stored, _ utf8: UnsafeBufferPointer<UInt8>, column: Int, colour: Bool, to bytes: inout [UInt8]
    ) {
        let space = UInt8(ascii: " ")
        let padding = max(0, widths[column] - Int(cell.width))
        if column > 0 {
            bytes.append(space)
            bytes.append(space)
        }
        if rightAligned[column] { bytes.append(contentsOf: repeatElement(space, count: padding)) }
        if colour, let style = cell.style {
            bytes.append(contentsOf: style(String(decoding: utf8, as: UTF8.self)).utf8)
        } else {
            bytes.append(contentsOf: utf8)
        }
        if !rightAligned[column] && column < widths.count - 1 {
            bytes.append(contentsOf: repeatElement(space, count: padding))
        }
    }
}
