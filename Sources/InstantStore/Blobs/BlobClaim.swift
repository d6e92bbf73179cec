/// The name that tells a prune about a blob placed in `blobs/` by a commit that may not
/// have finished: `tmp/<sha256>-<random>.claim`.
///
/// A claim is not a file of its own: inside the commit's transaction, the staged blob's
/// temp file (locked by its writer since before its name appeared) is renamed to its
/// claim, then linked into `blobs/`, and the claim is unlinked once the transaction has
/// committed. A writer that dies between the link and the commit leaves a dead claim,
/// another name of the orphan: the prune finds it from `tmp/` without listing `blobs/`
/// (``InstantStore/abandonedFiles()``), and removes the orphan in a write transaction
/// if no row claims it by then. A claim costs no inode: on a file system without a
/// journal, where many files were recently removed, a new inode can take a fraction of a
/// millisecond to find. (On a file system without hard links, the claim is an empty,
/// locked file of its own, and the blob is renamed into `blobs/`.)
enum BlobClaim {
    /// A new claim's path for `hash`.
    static func path(_ layout: StoreLayout, hash: BlobHash) -> String {
        layout.tmpDirectory + "/\(hash.hex)-\(RandomKey.make().prefix(8)).claim"
    }

    /// The hash a claim's name (not path) names, if it is one.
    static func hash(named name: String) -> BlobHash? {
        guard name.hasSuffix(".claim") else { return nil }
        return BlobHash(hex: String(name.prefix(64)))
    }
}
