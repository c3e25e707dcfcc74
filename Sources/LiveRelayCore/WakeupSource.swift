/// What wakes the relay when a writer commits (`LIVERELAY_WAKEUP`).
public enum WakeupSource: String, Sendable, Hashable, CaseIterable {
    /// The write-ahead log, read over a replication connection, when PostgreSQL allows one (the role may replicate,
    /// no synchronous standby is configured, a version whose WAL the relay reads): writers then send no NOTIFY and
    /// take no gate row. Otherwise, and whenever that connection is down, `notify`.
    case auto
    /// The writers' NOTIFY through the wake-up gate only.
    case notify
}
