import ArgumentParser
import Foundation
import Instant

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fill a temporary store and show each command at work on it.",
        discussion: """
            Seeds a store with two servers, a PDF both use, synced annotations, a layer with \
            changes not yet synced and an unused document, then runs ls, du, verify, prune and \
            rm on it, printing each command line first. The store is deleted afterwards \
            unless --keep.
            """)

    @Flag(help: "Keep the demo store, and print where it is.")
    var keep = false

    func run() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("instantctl-demo-\(getpid())")
        defer { if !keep { try? FileManager.default.removeItem(at: root) } }
        try DemoStore.seed(at: root)
        let output = Output(json: false, quiet: false)
        output.print("A demo store in \(root.path): 2 servers, 4 documents, 4 layers.")
        let steps: [[String]] = [
            ["ls"], ["du"], ["du", "--by", "document"], ["verify", "--deep"], ["ls", "--dirty"],
            ["rm", "--document", "contract-7", "--layer", "review"], ["prune", "--dry-run"], ["prune"],
            ["prune", "--max-size", "20KiB"], ["ls"],
        ]
        for step in steps {
            output.print(
                "\n"
                    + (Output.colour
                        ? Style.bold("$ instantctl \(step.joined(separator: " "))")
                        : "$ instantctl \(step.joined(separator: " "))"))
            do {
                var command = try Instantctl.parseAsRoot(step + ["--root", root.path])
                try command.run()
            } catch {
                let status = Instantctl.exitCode(for: ExitStatus.translate(error))
                output.print("(exit status \(status.rawValue))")
            }
        }
        if keep { output.print("\nThe store is kept at \(root.path); pass --root \(root.path) to explore it.") }
    }
}
