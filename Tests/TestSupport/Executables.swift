import Foundation

/// The executables the tests drive, found next to the test bundle in the build directory
/// (`swift build --build-tests` builds them with the tests).
public enum Executables {
    /// The built product `name`, such as `instant-server` or `instantctl`.
    public static func url(_ name: String) -> URL {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent(),
        ]
        for directory in candidates {
            let url = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return packageRoot.appendingPathComponent(".build/debug/\(name)")
    }

    /// The package's root directory (where `Package.swift` is).
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
}
