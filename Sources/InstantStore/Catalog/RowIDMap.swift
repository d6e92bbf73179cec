import GRDB

/// Values keyed by a catalog table's row ids, for joining whole tables in memory.
///
/// Row ids come from AUTOINCREMENT and are mostly dense, so an array indexed by id does a
/// dictionary's work several times faster (no hashing, no probing): joining 100,000
/// layers to their documents. When the ids are sparse (many rows deleted), a dictionary
/// keeps memory proportional to the rows.
///
/// ```swift
/// var names = RowIDMap<String>(try RowIDs.of("document", in: db))  // or (ids: 1...3, count: 3)
/// names[2] = "b"
/// names[2]  // "b"
/// names[7]  // nil
/// ```
struct RowIDMap<Value> {
    private var dense: [Value?] = []
    private var sparse: [Int64: Value] = [:]
    private let base: Int64
    private let isDense: Bool

    /// A map for the rows `rows` describes (see ``RowIDs/of(_:in:)``).
    init(_ rows: RowIDs) { self.init(ids: rows.range, count: rows.count) }

    /// A map for `count` rows whose ids lie in `ids`.
    init(ids: ClosedRange<Int64>, count: Int) {
        base = ids.lowerBound
        let span = ids.upperBound.subtractingReportingOverflow(ids.lowerBound)
        isDense = !span.overflow && span.partialValue < Int64(2 * count + 4096)
        if isDense {
            dense = Array(repeating: nil, count: Int(span.partialValue) + 1)
        } else {
            sparse.reserveCapacity(count)
        }
    }

    subscript(id: Int64) -> Value? {
        get {
            guard isDense else { return sparse[id] }
            let index = id &- base
            return index >= 0 && index < dense.count ? dense[Int(index)] : nil
        }
        set {
            guard isDense else {
                sparse[id] = newValue
                return
            }
            let index = id &- base
            precondition(index >= 0 && index < dense.count, "row id \(id) outside the range the map was made for")
            dense[Int(index)] = newValue
        }
    }
}

/// The range of a table's row ids and how many rows it has: what sizes a ``RowIDMap``.
/// One query (the count walks the table), so read it once per table and scan.
struct RowIDs {
    var range: ClosedRange<Int64>
    var count: Int

    static func of(_ table: String, in db: Database) throws -> RowIDs {
        let row = try Row.fetchOne(db, sql: "SELECT MIN(id), MAX(id), COUNT(*) FROM \(table)")
        guard let row, let low = row[0] as Int64?, let high = row[1] as Int64? else {
            return RowIDs(range: 1...1, count: 0)
        }
        return RowIDs(range: low...high, count: row[2])
    }
}
