// Measures whole `instantctl` processes over a store of 100,000 layers, side by side with
// coreutils on the same store's files.
//
//   swift build -c release --product instantctl && swift build -c release --product ctl-benchmark
//   ./.build/release/ctl-benchmark [--layers 100000]
//
// Each figure is the best of 5 runs of the whole process (start, open, query, print),
// output to /dev/null, timed from posix_spawn to waitpid. Baselines: `ls -l` of the
// 100,000 layer files, and `du -s` of the store directory.
import BenchmarkSupport
import Foundation
import InstantStore

var layers = 100_000
var kept: String?
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let name = arguments.removeFirst()
    switch name {
    case "--layers": layers = arguments.isEmpty ? layers : Int(arguments.removeFirst()) ?? layers
    case "--store": kept = arguments.isEmpty ? nil : arguments.removeFirst()  // reuse or create, and keep
    default:
        print("unknown option \(name)")
        exit(2)
    }
}

let instantctl = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("instantctl")
guard FileManager.default.isExecutableFile(atPath: instantctl.path) else {
    print("build instantctl first: swift build -c release --product instantctl")
    exit(1)
}
let root =
    kept.map { URL(fileURLWithPath: $0) }
    ?? FileManager.default.temporaryDirectory.appendingPathComponent("ctl-bench-\(getpid())")
defer { if kept == nil { try? FileManager.default.removeItem(at: root) } }
if !FileManager.default.fileExists(atPath: root.appendingPathComponent("catalog.sqlite").path) {
    print("Creating a store with \(layers) layers (and a file for each)…")
    try SyntheticStore.create(at: root, layers: layers, files: true)
}

/// Wall time of the best of `runs` runs of `executable arguments`, output discarded.
func best(_ executable: String, _ arguments: [String], runs: Int = 5) throws -> Double {
    try ProcessTiming.best(of: runs, executable, arguments)
}

let path = root.path
let rows: [(String, Double, String, Double?)] = [
    (
        "instantctl ls", try best(instantctl.path, ["ls", "--root", path]), "ls -l layers/",
        try best("/bin/ls", ["-l", root.appendingPathComponent("layers").path])
    ),
    ("instantctl ls --json", try best(instantctl.path, ["ls", "--json", "--root", path]), "", nil),
    (
        "instantctl du", try best(instantctl.path, ["du", "--root", path]), "du -s root",
        try best("/usr/bin/du", ["-s", path])
    ),
    ("instantctl du --by document", try best(instantctl.path, ["du", "--by", "document", "--root", path]), "", nil),
]
print(
    "\ninstantctl benchmark — \(ProcessInfo.processInfo.activeProcessorCount) cores, \(layers + 1) layers, best of 5\n")
for (name, time, baseline, baseTime) in rows {
    let base = baseTime.map { String(format: "%@ %6.0f ms   ratio %.2f", baseline, $0 * 1000, time / $0) } ?? ""
    let padded = name.padding(toLength: 28, withPad: " ", startingAt: 0)
    print(String(format: "%@ %6.0f ms   %@   %@", padded, time * 1000, time <= 0.3 ? "≤ 300 ms ✔" : "> 300 ms ✘", base))
}
