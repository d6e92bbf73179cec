/// Aligned columns: text left, numbers right, two spaces between, header in bold on a
/// terminal. Widths count characters, so identifiers in any script line up.
///
/// ```swift
/// var table = Table(["TENANT", "BYTES"], rightAligned: [1])
/// table.add(["https://a.example.com", "1.2 MiB"])
/// output.print(table.render(colour: false))
/// ```
///
/// The table renders to UTF-8 bytes in one buffer: a 100,000-line listing is built without
/// a `String` per line.
struct Table {
    /// A cell's text and, optionally, a style applied after alignment.
    struct Cell: ExpressibleByStringLiteral {
        var text: String
        var style: ((String) -> String)?
        /// Characters on screen, measured once.
        let width: Int

        init(_ text: String, style: ((String) -> String)? = nil) {
            self.text = text
            self.style = style
            width = Table.width(text)
        }

        init(stringLiteral value: String) { self.init(value) }
    }

    private let header: [Cell]
    private let rightAligned: [Bool]
    /// Every row's cells one after another: one allocation for the table, not one per row.
    private var cells: [Cell] = []
    private var widths: [Int]

    init(_ header: [String], rightAligned: Set<Int> = []) {
        self.header = header.map { Cell($0) }
        self.rightAligned = header.indices.map { rightAligned.contains($0) }
        widths = self.header.map(\.width)
    }

    var isEmpty: Bool { cells.isEmpty }

    /// Makes room for `count` more rows.
    mutating func reserve(rows count: Int) {
        cells.reserveCapacity(cells.count + count * widths.count)
    }

    /// Adds a row: one cell per column, missing cells left empty, extra ones dropped.
    mutating func add(_ row: [Cell]) {
        for index in widths.indices { append(index < row.count ? row[index] : "") }
    }

    /// Adds the next cell, row by row, left to right. Cheaper than ``add(_:)`` for long
    /// tables: no array per row.
    mutating func append(_ cell: Cell) {
        let column = cells.count % widths.count
        widths[column] = max(widths[column], cell.width)
        cells.append(cell)
    }

    /// The table as UTF-8 lines, each ending in a newline; without the header when
    /// `header` is false.
    func render(colour: Bool, header showHeader: Bool = true) -> [UInt8] {
        var bytes: [UInt8] = []
        let rows = cells.count / widths.count
        bytes.reserveCapacity((widths.reduce(0, +) + 2 * widths.count) * (rows + 1))
        if showHeader {
            var line: [UInt8] = []
            append(header[...], colour: false, to: &line)
            line.removeLast()  // the newline: the style closes before it
            let text = String(decoding: line, as: UTF8.self)
            bytes.append(contentsOf: (colour ? Style.bold(text) : text).utf8)
            bytes.append(UInt8(ascii: "\n"))
        }
        for row in 0..<rows {
            append(cells[row * widths.count..<(row + 1) * widths.count], colour: colour, to: &bytes)
        }
        return bytes
    }

    /// Characters on screen; counting bytes when the text is ASCII (the common case) is
    /// much cheaper than counting grapheme clusters.
    static func width(_ text: String) -> Int {
        let utf8 = text.utf8
        return utf8.allSatisfy { $0 < 0x80 } ? utf8.count : text.count
    }

    private func append(_ row: ArraySlice<Cell>, colour: Bool, to bytes: inout [UInt8]) {
        let space = UInt8(ascii: " ")
        for (index, cell) in row.enumerated() {
            let padding = max(0, widths[index] - cell.width)
            if index > 0 { bytes.append(contentsOf: [space, space]) }
            if rightAligned[index] { bytes.append(contentsOf: repeatElement(space, count: padding)) }
            if colour, let style = cell.style {
                bytes.append(contentsOf: style(cell.text).utf8)
            } else {
                bytes.append(contentsOf: cell.text.utf8)
            }
            // Left-aligned cells are padded, except the last: no trailing spaces.
            if !rightAligned[index] && index < row.count - 1 {
                bytes.append(contentsOf: repeatElement(space, count: padding))
            }
        }
        bytes.append(UInt8(ascii: "\n"))
    }
}
