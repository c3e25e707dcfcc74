import Synchronization

/// A stop flag the delivery workers of one relay share (see `DeliveryWorker.run`).
public final class StopSignal: Sendable {
    private let stopped = Mutex(false)
    public init() {}
    public func stop() { stopped.withLock { $0 = true } }
    public var isStopped: Bool { stopped.withLock { $0 } }
}
