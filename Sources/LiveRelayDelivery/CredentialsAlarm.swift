import LiveRelayCore
import Logging
import Synchronization

/// Says at error level, at most once a minute per push service and process, that the service refuses the relay's
/// own credentials. The pushes wait with backoff (`DeliveryOutcome.credentialsRejected`), so nothing else would tell
/// an operator that a key is wrong until the waiting pushes start to fail an hour later.
final class CredentialsAlarm: Sendable {
    static let shared = CredentialsAlarm()

    private let lastSaid = Mutex<[TransportKind: ContinuousClock.Instant]>([:])
    private let interval = Duration.seconds(60)

    /// Looks through one batch's results; logs for each service that refused the relay's credentials in it.
    func check(_ results: [DeliveryResult], of pushes: [DeliveryPlanner.Push], logger: Logger) {
        for (push, result) in zip(pushes, results) where result.outcome == .credentialsRejected {
            let transport = push.delivery.platform.transport
            let now = ContinuousClock.now
            let due = lastSaid.withLock { said in
                guard said[transport].map({ now - $0 >= interval }) ?? true else { return false }
                said[transport] = now
                return true
            }
            guard due else { continue }
            let reason = result.providerReason.map { " (\($0))" } ?? ""
            switch transport {
            case .apns:
                logger.error("""
                    APNs refuses the relay's key\(reason): pushes wait with backoff, each for up to an hour, until it \
                    is fixed; check APNS_TEAM_ID, APNS_KEY_ID and the key, that the key is not revoked, and the \
                    machine's clock
                    """)
            case .fcm:
                logger.error("""
                    FCM refuses the relay's credentials\(reason), a fresh access token included: messages wait with \
                    backoff, each for up to an hour, until they are fixed; check the service account's key and that \
                    it may send with Firebase Cloud Messaging
                    """)
            }
        }
    }
}
