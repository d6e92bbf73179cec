import InstantStore

/// What a removal asked for by name covers: which layers, documents or tenants to remove,
/// and which of their layers hold changes not yet synced. `instantctl rm` resolves one,
/// refuses or exports when ``dirtyLayers`` is not empty, then calls
/// ``remove(from:policy:into:)``.
///
/// ```swift
/// let scope = try RemovalScope.resolve(.document("contract-7", tenant: nil), in: store)
/// if scope.dirtyLayers.isEmpty {
///     var report = RemovalReport()
///     try scope.remove(from: store, policy: .refuse, into: &report)  // still refuses a change made meanwhile
/// }
/// ```
public struct RemovalScope: Sendable, Equatable {
    /// One removal call.
    public enum Target: Sendable, Equatable {
        case layer(LayerReference)
        case document(DocumentReference)
        case tenant(TenantURL)

        /// Removes this target, keeping or discarding pending changes as `policy` says.
        public func remove(from store: InstantStore, _ policy: PendingChangesPolicy) throws(StoreError)
            -> RemovalReport
        {
            switch self {
            case .layer(let reference):
                try store.removeLayer(
                    tenant: reference.tenant, document: reference.document, layer: reference.layer,
                    pendingChanges: policy)
            case .document(let reference):
                try store.removeDocument(tenant: reference.tenant, document: reference.document, pendingChanges: policy)
            case .tenant(let tenant):
                try store.removeTenant(tenant, pendingChanges: policy)
            }
        }
    }

    public var targets: [Target]
    /// Layers in scope holding changes not yet synced (by the catalog's count).
    public var dirtyLayers: [LayerReference]
    /// How many changes those layers hold.
    public var pendingChanges: Int64

    /// What to remove, by name. A nil tenant means: every tenant for ``all(tenant:)``; the
    /// one tenant that has the document otherwise.
    public enum Request: Sendable, Equatable {
        case all(tenant: TenantURL?)
        case document(String, tenant: TenantURL?)
        case layer(String, document: String, tenant: TenantURL?)
    }

    /// Resolves `request` against what the store holds.
    ///
    /// Throws ``StoreError/nothingStored(tenant:)``, ``StoreError/noSuchDocument(tenant:document:)``,
    /// ``StoreError/noSuchLayer(tenant:document:layer:)``, or
    /// ``StoreError/ambiguousDocument(document:tenants:)`` when the names match nothing, or
    /// more than one thing.
    public static func resolve(_ request: Request, in store: InstantStore) throws(StoreError) -> RemovalScope {
        let inScope: [LocalDescriptor]
        let targets: [Target]
        switch request {
        case .all(let tenant):
            let descriptors = try store.localDescriptors(tenant: tenant)
            let known = Set(try store.cacheEntries(tenant: tenant).map(\.tenant)).union(descriptors.map(\.tenant))
            if let tenant, !known.contains(tenant) { throw .nothingStored(tenant: tenant.string) }
            inScope = descriptors
            targets = (tenant.map { [$0] } ?? known.sorted()).map { .tenant($0) }
        case .document(let document, let tenant), .layer(_, let document, let tenant):
            let owners = Set(
                try store.cacheEntries(tenant: tenant).filter { $0.documentIdentifier.hasSameBytes(as: document) }
                    .map(\.tenant))
            guard let owner = owners.first else {
                throw .noSuchDocument(tenant: tenant?.string ?? "any tenant", document: document)
            }
            guard owners.count == 1 else {
                throw .ambiguousDocument(document: document, tenants: owners.map(\.string).sorted())
            }
            // By bytes, as the store compares ids: another spelling is another document.
            let layers = try store.localDescriptors(tenant: owner).filter {
                $0.documentIdentifier.hasSameBytes(as: document)
            }
            if case .layer(let layer, _, _) = request {
                inScope = layers.filter { $0.layerName.hasSameBytes(as: layer) }
                guard !inScope.isEmpty else {
                    throw .noSuchLayer(tenant: owner.string, document: document, layer: layer)
                }
                targets = [.layer(LayerReference(tenant: owner, document: document, layer: layer))]
            } else {
                inScope = layers
                targets = [.document(DocumentReference(tenant: owner, document: document))]
            }
        }
        let dirty = inScope.filter { $0.pendingChangeCount > 0 }
        return RemovalScope(
            targets: targets,
            dirtyLayers: dirty.map {
                LayerReference(tenant: $0.tenant, document: $0.documentIdentifier, layer: $0.layerName)
            },
            pendingChanges: dirty.reduce(0) { $0 + $1.pendingChangeCount })
    }

    /// Removes every target (a tenant is one transaction), merging their reports into
    /// `report`. Stops at the first failure: what was already removed stays removed, and
    /// stays in `report`, and the error says why the rest was not.
    public func remove(
        from store: InstantStore, policy: PendingChangesPolicy, into report: inout RemovalReport
    ) throws(StoreError) {
        for target in targets { report.merge(try target.remove(from: store, policy)) }
    }
}
