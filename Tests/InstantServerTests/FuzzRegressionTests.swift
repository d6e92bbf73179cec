import Foundation
import Testing

@testable import InstantServer
import ServerTestSupport

/// Every input a fuzz target (scripts/fuzz.sh) ever crashed on, kept in `FuzzCrashers/<target>/`,
/// and the seeds in `Fuzz/Seeds/<target>/`, run through the same entry points: each must
/// return without trapping.
@Suite struct FuzzRegressionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let repository = root.deletingLastPathComponent().deletingLastPathComponent()

    static var inputs: [(target: String, file: URL)] {
        var found: [(String, URL)] = []
        for directory in [root.appendingPathComponent("FuzzCrashers"), repository.appendingPathComponent("Fuzz/Seeds")]
        {
            for target in FuzzTargets.all.keys.sorted() {
                let folder = directory.appendingPathComponent(target)
                let files =
                    (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []
                found += files.filter { !$0.lastPathComponent.hasPrefix(".") }.map { (target, $0) }
            }
        }
        return found.sorted { $0.1.path < $1.1.path }
    }

    @Test func everyKeptInputRunsThrough() throws {
        let inputs = Self.inputs
        #expect(Set(inputs.map(\.target)) == Set(FuzzTargets.all.keys), "every target has at least a seed")
        for (target, file) in inputs {
            let bytes = try [UInt8](Data(contentsOf: file))
            FuzzTargets.all[target]?(bytes)
        }
    }
}
