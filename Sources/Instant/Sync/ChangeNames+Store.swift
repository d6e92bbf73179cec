import InstantStore

/// The store's record change (see `WireServerChange`).
typealias StoredServerChange = ServerChange
