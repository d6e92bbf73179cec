// Measures whole `instantctl` processes over a store of 100,000 layers, side by side with
// coreutils on the same store's files.
//
//   swift build -c release --product instantctl && swift build -c release --product ctl-benchmark
//   ./.build/release/ctl-benchmark [--layers 100000] [--store DIR] [--compare OTHER-INSTANTCTL]
//
// Each figure is the best of 5 runs of the whole process (start, open, query, print),
// output to /dev/null, timed from posix_spawn to waitpid. Baselines: `ls -l` of the
// 100,000 layer files, and `du -s` of the store directory. With `--compare`, another
// build of instantctl (an earlier commit, say) runs the same commands in the same run.
// `--store DIR` keeps the synthetic store there (and reuses it if it exists).
import BenchmarkSupport
import Foundation
import InstantStore

var layers = 100_000
var kept: String?
var compared: String?
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let name = arguments.removeFirst()
    switch name {
    case "--layers": layers = arguments.isEmpty ? layers : Int(arguments.removeFirst()) ?? layers
    case "--store": kept = arguments.isEmpty ? nil : arguments.removeFirst()  // reuse or create, and keep
    case "--compare": compared = arguments.isEmpty ? nil : arguments.removeFirst()
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

let path = root.path
let commands: [(arguments: [String], baseline: (name: String, executable: String, arguments: [String])?)] = [
    (["ls"], ("ls -l layers/", "/bin/ls", ["-l", root.appendingPathComponent("layers").path])),
    (["ls", "--json"], nil),
    (["du"], ("du -s root", "/usr/bin/du", ["-s", path])),
    (["du", "--by", "document"], nil),
]
print(
    "\ninstantctl benchmark — \(ProcessInfo.processInfo.activeProcessorCount) cores, \(layers + 1) layers, best of 5\n")
for command in commands {
    let time = try ProcessTiming.best(of: 5, instantctl.path, command.arguments + ["--root", path])
    var line =
        "instantctl \(command.arguments.joined(separator: " "))".padding(toLength: 28, withPad: " ", startingAt: 0)
        + String(format: " %6.0f ms  %@", time * 1000, time <= 0.3 ? "≤ 300 ms ✔" : "> 300 ms ✘")
    if let compared {
        let before = try ProcessTiming.best(of: 5, compared, command.arguments + ["--root", path])
        line += String(format: "   compared build %6.0f ms (%.2f×)", before * 1000, before / time)
    }
    if let baseline = command.baseline {
        let base = try ProcessTiming.best(of: 5, baseline.executable, baseline.arguments)
        line += String(format: "   %@ %6.0f ms (ratio %.2f)", baseline.name, base * 1000, time / base)
    }
    print(line)
}
