import LiveRelayAPNs
import LiveRelayCore
import LiveRelayFCM
import Logging
import NIOCore

extension RelayServer {
    /// The push services of one relay: a transport of each configured service per worker, and their credential counts.
    struct Transports: Sendable {
        var perWorker: [[any DeliveryTransport]]
        /// The loop of each worker: its transports' connections live there.
        var loops: [any EventLoop]
        var credentialsMinted: @Sendable () -> [TransportKind: Int]
        /// Closes every transport's connections and the credential sources'.
        var shutdown: @Sendable () async -> Void
        /// Gets the credentials that need a round trip (FCM's access token) before the first delivery needs them, and
        /// says at start-up when they cannot be had.
        var warmUp: @Sendable (Logger) async -> Void
    }

    /// One client per worker and service (one HTTP/2 connection per origin each): a connection's streams are handled
    /// on one event loop thread, so several connections spread the work over the cores. Worker `i` and its clients
    /// share loop `i` (round robin over `loops`), so that a push goes out on the thread that claimed it.
    /// Credentials are shared.
    func makeTransports(loops allLoops: [any EventLoop]) throws -> Transports {
        let workers = configuration.delivery.workers
        let loops = (0..<workers).map { allLoops[$0 % allLoops.count] }
        var perWorker: [[any DeliveryTransport]] = Array(repeating: [], count: workers)
        var counters: [(TransportKind, @Sendable () -> Int)] = []
        var sources: [FCMAccessTokenSource] = []
        if let apns = configuration.apns {
            let tokens = try ProviderTokenSource(
                teamID: apns.teamID, keyID: apns.keyID, privateKeyPEM: apns.privateKeyPEM)
            for index in 0..<workers {
                perWorker[index].append(APNsTransport(
                    client: try APNsClient(configuration: apns, tokens: tokens, eventLoop: loops[index])))
            }
            counters.append((.apns, { tokens.mintCount }))
        }
        if let fcm = configuration.fcm {
            let tokens = try FCMAccessTokenSource(account: fcm.serviceAccount, caFile: fcm.caFile)
            for index in 0..<workers {
                perWorker[index].append(try FCMTransport(configuration: fcm, tokens: tokens, eventLoop: loops[index]))
            }
            counters.append((.fcm, { tokens.mintCount }))
            sources.append(tokens)
        }
        let minted = counters, all = perWorker.joined(), credentialSources = sources
        return Transports(perWorker: perWorker, loops: loops, credentialsMinted: {
            Dictionary(minted.map { ($0.0, $0.1()) }, uniquingKeysWith: +)
        }, shutdown: {
            for transport in all { await transport.shutdown() }
            for source in credentialSources { await source.shutdown() }
        }, warmUp: { logger in
            for source in credentialSources {
                do {
                    _ = try await source.token()
                } catch {
                    logger.error("no FCM access token yet (Android deliveries retry until there is one)", metadata: [
                        "error": "\(error)",
                    ])
                }
            }
        })
    }
}
