import NIOCore
import NIOPosix
import Synchronization

/// Wakes one waiting consumer. Rings while nobody waits are kept (once), so a wake-up is never lost.
///
/// The timeout is a timer on an event loop, cancelled (and freed) the moment the bell rings. A `Task.sleep` raced
/// against the ring would do the same job, but a cancelled sleep keeps its task allocated until its deadline: with
/// a worker waking hundreds of times a second and a 500 ms poll, that was memory held for nothing.
public final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
        /// Which wait the timer belongs to, so a timer that fires late cannot end a later wait.
        var generation = 0
        var timer: Scheduled<Void>?
    }
    private let state = Mutex(State())
    private let timers: any EventLoop

    public init(timers: any EventLoop = MultiThreadedEventLoopGroup.singleton.any()) {
        self.timers = timers
    }

    public func ring() {
        let woken = state.withLock { state -> Woken in
            if state.waiter == nil { state.rung = true }
            return Self.takeWaiter(&state)
        }
        woken.resume()
    }

    /// Returns when the bell rings (or rang since the last wait), the timeout passes or the task is cancelled.
    public func wait(timeout: Duration) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let generation = state.withLock { state -> Int? in
                    if state.rung || Task.isCancelled {
                        state.rung = false
                        return nil
                    }
                    state.waiter = continuation
                    state.generation += 1
                    return state.generation
                }
                guard let generation else { return continuation.resume() }
                let timer = timers.scheduleTask(in: TimeAmount(timeout)) { [self] in
                    let woken = state.withLock { state in
                        state.generation == generation ? Self.takeWaiter(&state) : Woken()
                    }
                    woken.resume()
                }
                let alreadyWoken = state.withLock { state -> Bool in
                    guard state.generation == generation, state.waiter != nil else { return true }
                    state.timer = timer
                    return false
                }
                if alreadyWoken { timer.cancel() }
            }
        } onCancel: {
            state.withLock { Self.takeWaiter(&$0) }.resume()
        }
    }

    /// A waiter taken out of the state, with its timer; both are dealt with outside the lock.
    private struct Woken {
        var waiter: CheckedContinuation<Void, Never>?
        var timer: Scheduled<Void>?

        func resume() {
            timer?.cancel()
            waiter?.resume()
        }
    }

    private static func takeWaiter(_ state: inout State) -> Woken {
        defer {
            state.waiter = nil
            state.timer = nil
        }
        return Woken(waiter: state.waiter, timer: state.timer)
    }
}
