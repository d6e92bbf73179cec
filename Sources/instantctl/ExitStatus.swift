import ArgumentParser
import Foundation
import InstantStore

/// The exit statuses, one meaning each (documented in `instantctl --help` and the man page).
enum ExitStatus {
    static let problems = ExitCode(1)
    static let usage = ExitCode(2)
    static let refused = ExitCode(3)
    static let unavailable = ExitCode(4)

    /// Prints what went wrong (unless ArgumentParser will) and returns the error to exit with.
    static func translate(_ error: any Error) -> any Error {
        switch error {
        case let error as ExitCode: return error
        case let error as CommandError:
            Output.error(error.message)
            return error.status
        case let error as StoreError:
            Output.error(error.description)
            return status(for: error)
        default:
            let code = Instantctl.exitCode(for: error)
            guard code == .validationFailure else { return error }
            Output.error(Instantctl.fullMessage(for: error))
            return usage
        }
    }

    static func status(for error: StoreError) -> ExitCode { status(forStoreCode: error.code) }

    /// The status of a store error by its code: also one the client reports inside an
    /// `InstantError` (``InstantError/storeCode``), so a busy store exits 4 whichever
    /// step of a command met it.
    static func status(forStoreCode code: String) -> ExitCode {
        switch code {
        case "pending_changes", "origin_store", "read_only_store": refused
        case "ambiguous_document": usage
        case "busy", "catalog_corrupt", "unsupported_format_version", "database_error", "io_failure",
            "layer_unreadable":
            unavailable
        default: problems
        }
    }
}

/// A failure the command explains itself, with the status to exit with.
struct CommandError: Error {
    var message: String
    var status: ExitCode

    static func usage(_ message: String) -> CommandError { CommandError(message: message, status: ExitStatus.usage) }
}
