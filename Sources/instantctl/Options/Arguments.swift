import ArgumentParser
import Foundation
import InstantStore

/// A size such as `10GB`, `500MiB`, `1.5G` or `123456` (bytes). `kB MB GB TB` are powers of
/// 1000; `KiB MiB GiB TiB`, and `K M G T` alone, powers of 1024.
struct ByteSize: ExpressibleByArgument, Equatable {
    var bytes: Int64

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces)
        let digits = text.prefix { $0.isNumber || $0 == "." }
        guard let number = Double(digits), number >= 0 else { return nil }
        let unit = text.dropFirst(digits.count).trimmingCharacters(in: .whitespaces).lowercased()
        let scale: Double
        switch unit {
        case "", "b": scale = 1
        case "kb": scale = 1e3
        case "mb": scale = 1e6
        case "gb": scale = 1e9
        case "tb": scale = 1e12
        case "k", "kib": scale = 1024
        case "m", "mib": scale = 1_048_576
        case "g", "gib": scale = 1_073_741_824
        case "t", "tib": scale = 1_099_511_627_776
        default: return nil
        }
        guard number * scale < 9e18 else { return nil }
        bytes = Int64(number * scale)
    }

    static var defaultCompletionKind: CompletionKind { .list(["1GB", "10GB", "500MiB"]) }
}

/// An age such as `30d`, `12h`, `90m`, `45s` or `2w`.
struct Age: ExpressibleByArgument, Equatable {
    var seconds: TimeInterval

    init?(argument: String) {
        guard let unit = argument.last, let number = Double(argument.dropLast()), number >= 0 else { return nil }
        switch unit {
        case "s": seconds = number
        case "m": seconds = number * 60
        case "h": seconds = number * 3600
        case "d": seconds = number * 86400
        case "w": seconds = number * 7 * 86400
        default: return nil
        }
    }

    static var defaultCompletionKind: CompletionKind { .list(["7d", "30d", "12h"]) }
}

/// A share such as `10%` or `0.1`.
struct Fraction: ExpressibleByArgument, Equatable {
    var value: Double

    init?(argument: String) {
        let percent = argument.hasSuffix("%")
        guard let number = Double(percent ? String(argument.dropLast()) : argument) else { return nil }
        let value = percent ? number / 100 : number
        guard value > 0, value <= 1 else { return nil }
        self.value = value
    }
}

extension TenantURL: ExpressibleByArgument {
    public init?(argument: String) {
        guard let url = try? TenantURL(argument) else { return nil }
        self = url
    }
}
