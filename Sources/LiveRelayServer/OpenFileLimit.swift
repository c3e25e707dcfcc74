#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// The process's limit on open files. Every connection is a file: each event stream, each request, each session to
/// PostgreSQL, APNs and FCM. Many service managers start processes with a soft limit of 1,024 under a much higher
/// hard one (systemd's default; Docker's on recent engines), which would cap a relay at about a thousand open
/// streams while the system allows far more. So start-up raises the soft limit to the hard one, as servers commonly
/// do, and says so; a hard limit that is itself low is named with how to raise it.
enum OpenFileLimit {
    /// Below this the relay warns: a few thousand open streams is an ordinary load for one relay.
    static let comfortable: UInt64 = 8_192

    /// The soft limit before and after raising it to the hard limit; nil when the limits cannot be read.
    static func raiseToHardLimit() -> (before: UInt64, after: UInt64)? {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return nil }
        let before = UInt64(limit.rlim_cur)
        guard limit.rlim_cur < limit.rlim_max else { return (before, before) }
        var raised = limit
        raised.rlim_cur = limit.rlim_max
        guard setrlimit(resource, &raised) == 0 else { return (before, before) }
        return (before, UInt64(raised.rlim_cur))
    }

    /// Raises the limit and logs what it did, or why the limit stays low.
    static func raise(logger: Logger) {
        guard let (before, after) = raiseToHardLimit() else { return }
        if after > before {
            logger.info("open files limit raised to the hard limit", metadata: [
                "from": "\(before)", "to": "\(after)",
            ])
        }
        if after < comfortable {
            logger.warning("""
                at most \(after) files may be open, and each event stream, request and database session is one: \
                raise the hard limit (`ulimit -Hn`, systemd's LimitNOFILE, Docker's --ulimit nofile=65536:65536)
                """)
        }
    }

    #if canImport(Glibc)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
