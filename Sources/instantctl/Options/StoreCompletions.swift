import ArgumentParser
import Foundation
import InstantStore

/// Completions read from the local store: the shell runs `instantctl` to ask, passing the
/// words typed so far, so `--root`, `--tenant` and `--document` already typed narrow them.
enum StoreCompletions {
    static let tenants = CompletionKind.custom { words, _, _ in
        descriptors(words).map(\.tenant.string).uniqued()
    }

    static let documents = CompletionKind.custom { words, _, _ in
        descriptors(words).map(\.documentIdentifier).uniqued()
    }

    static let layers = CompletionKind.custom { words, _, _ in
        let document = value(of: "--document", in: words)
        return descriptors(words).filter { entry in
            document.map { entry.documentIdentifier.hasSameBytes(as: $0) } ?? true
        }
        .map(\.layerName).uniqued()
    }

    /// Layer files in the store's `quarantine/` (read from the directory: nothing is opened).
    static let quarantinedLayers = CompletionKind.custom { words, _, _ in
        let root = value(of: "--root", in: words).map { URL(fileURLWithPath: $0) } ?? StoreLayout.defaultRoot()
        let names =
            (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("quarantine").path)) ?? []
        return names.filter { $0.contains("-layers_") && $0.hasSuffix(".sqlite") }.sorted()
    }

    /// The descriptors of the store named by the words (`--root`, else the environment),
    /// of the `--tenant` typed, if any. Nothing when there is no store.
    private static func descriptors(_ words: [String]) -> [LocalDescriptor] {
        let root = value(of: "--root", in: words).map { URL(fileURLWithPath: $0) } ?? StoreLayout.defaultRoot()
        guard let store = try? GlobalOptions.existingStore(at: root) else { return [] }
        let tenant = value(of: "--tenant", in: words).flatMap { try? TenantURL($0) }
        return (try? store.localDescriptors(tenant: tenant)) ?? []
    }

    private static func value(of option: String, in words: [String]) -> String? {
        guard let index = words.lastIndex(of: option), index + 1 < words.count else { return nil }
        return words[index + 1]
    }
}

extension Array where Element: Hashable {
    fileprivate func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
