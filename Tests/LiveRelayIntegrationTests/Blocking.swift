import NIOPosix

/// Blocking work of the tests themselves (a child process waited for, a database created, a cluster restarted), run on
/// NIO's thread pool instead of a thread of Swift's cooperative pool.
///
/// The test process runs up to 12 tests at once, with their in-process relays, on as many cooperative threads as the
/// machine has cores (two here): a `createdb` waited for on one of them stalls every relay's tasks meanwhile, which
/// tests with bounds of a few seconds (a closed stream's presence gone, say) must not depend on.
enum Blocking {
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }
}
