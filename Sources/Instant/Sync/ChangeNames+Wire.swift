import InstantProtocol

/// The wire's record change (both modules name their type `ServerChange`, and neither
/// module name can qualify it: `InstantProtocol` is also the standard library's protocol).
typealias WireServerChange = ServerChange
