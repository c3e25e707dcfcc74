import Foundation
import LiveRelayDevSupport

/// `liverelay dev`'s cluster, watched while the relay runs: a PostgreSQL that stops underneath it (killed, or stopped
/// by hand) is started again, saying so, and the relay reconnects by itself with nothing lost. One that keeps stopping
/// is given up on: `dev` says where the server's log is and stops as on Ctrl-C.
struct DevPostgresWatch: Sendable {
    let postgres: LocalPostgres
    var interval: Duration = .seconds(1)
    /// More restarts than this within `window` is a server that cannot stay up.
    var restartLimit = 3
    var window: Duration = .seconds(60)

    /// Runs until cancelled (dev's stop cancels it, and waits for it, before it stops the cluster itself).
    func run() async {
        var restarts: [ContinuousClock.Instant] = []
        while (try? await Task.sleep(for: interval)) != nil {
            guard !postgres.postmasterIsAlive, !Task.isCancelled else { continue }
            let now = ContinuousClock.now
            restarts = restarts.filter { now - $0 < window } + [now]
            guard restarts.count <= restartLimit else {
                say("PostgreSQL stopped \(restarts.count) times in a minute; stopping (its log: "
                    + "\(postgres.dataDirectory)/server.log)")
                kill(getpid(), SIGINT)
                return
            }
            say("PostgreSQL stopped underneath it (port \(postgres.port)); starting it again …")
            if let failure = await startAgain() {
                say("PostgreSQL did not start again: \(failure); stopping")
                kill(getpid(), SIGINT)
                return
            }
            say("PostgreSQL is back; the relay reconnects by itself, and what was written before is delivered")
        }
    }

    /// Starts the server, trying three times two seconds apart: a killed server's sessions may still hold its shared
    /// memory for a moment, and someone may have started it meanwhile (a `pg_ctl restart` by hand), which is as good.
    /// Returns the last failure, or nil once it runs.
    private func startAgain() async -> (any Error)? {
        var failure: (any Error)?
        for attempt in 1...3 {
            do {
                try postgres.start()
                return nil
            } catch {
                failure = error
            }
            if attempt < 3 { try? await Task.sleep(for: .seconds(2)) }
            if postgres.postmasterIsAlive { return nil }
        }
        return failure
    }

    private func say(_ text: String) {
        print("liverelay dev: \(text)")
        fflush(nil)
    }
}
