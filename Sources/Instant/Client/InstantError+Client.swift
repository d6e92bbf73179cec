import InstantStore

extension InstantError {
    /// The client's error for whatever one of its operations threw: its own errors as they
    /// are, a server's refusal or a network failure, a store failure, or a cancellation
    /// (`cancelled` says what was cancelled). Anything else becomes `otherwise(error)`.
    init(
        from error: any Error, cancelled: String, otherwise: (any Error) -> InstantError
    ) {
        switch error {
        case let error as InstantError: self = error
        case let failure as APIFailure: self = failure.instantError
        case let error as StoreError: self.init(error)
        case is CancellationError: self.init(.requestFailed, cancelled)
        default: self = otherwise(error)
        }
    }
}
