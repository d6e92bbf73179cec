import Synchronization

/// The file in `tmp/` that names a blob while a commit renames it into `blobs/`:
/// `<sha256>-<random>.claim`, locked by its writer. If the writer dies between the rename
/// and the catalog's commit, a prune finds the orphan from this claim without listing
/// `blobs/` (``InstantStore/abandonedFiles()``).
///
/// A claim may also come early, made while the blob still arrives (``BlobClaim/inAdvance(_:hash:)``):
/// a new file costs an inode, which on a file system without a journal, where many files
/// were recently removed, can take a fraction of a millisecond to find; made early, that
/// is not on the commit's path. A claim whose blob never reaches `blobs/` only costs a
/// prune a look: the blob is missing there, or has a catalog row (claimed), or is an
/// orphan of a writer that died, which the prune removes in a write transaction.
final class BlobClaim: Sendable {
    /// The blob this claim names.
    let hash: BlobHash
    /// The claim file, once made (nil when it could not be).
    private let made: Pending<POSIXFile?>
    /// Whether the file was handed over (``take(for:)``) or removed (``discard()``).
    private let taken = Mutex(false)

    private init(hash: BlobHash, made: Pending<POSIXFile?>) {
        self.hash = hash
        self.made = made
    }

    /// A claim for `hash`, made now on this thread.
    static func make(_ layout: StoreLayout, hash: BlobHash) throws(StoreError) -> POSIXFile {
        try POSIXFile.createLocked(layout.tmpDirectory + "/\(hash.hex)-\(RandomKey.make().prefix(8)).claim")
    }

    /// Starts making a claim for `hash` on another thread; ``take(for:)`` waits for it.
    /// (Only the claim: the blob's fan-out directory is made inside the commit's
    /// transaction, which syncs its parent, so that a directory another writer finds
    /// there is never one whose entry is not durable yet.)
    static func inAdvance(_ layout: StoreLayout, hash: BlobHash) -> BlobClaim {
        BlobClaim(
            hash: hash,
            made: Pending(label: "instant-store.claim") { () -> POSIXFile? in
                // A failure here is not reported: the commit makes its claim itself then,
                // and reports its own failure.
                guard let file = try? make(layout, hash: hash) else { return nil }
                if (try? Failpoint.check("blob.claimMade")) == nil {
                    // Failed there by a test: as if it could not be made.
                    try? FileSystem.remove(file.path)
                    file.close()
                    return nil
                }
                return file
            })
    }

    /// The claim, once made, if it names `hash` (nil when it could not be made, or was
    /// taken already); the caller owns it from then on.
    func take(for hash: BlobHash) -> POSIXFile? {
        guard hash == self.hash, let file = made.wait() else { return nil }
        let first = taken.withLock { taken in
            defer { taken = true }
            return !taken
        }
        return first ? file : nil
    }

    /// Removes the claim unless it was taken (the blob will not be committed).
    func discard() {
        guard let file = take(for: hash) else { return }
        try? FileSystem.remove(file.path)
        file.close()
    }
}
