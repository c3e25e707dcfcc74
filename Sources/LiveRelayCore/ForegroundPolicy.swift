/// What an update push does while its activity is foreground: its app holds a stream of the activity's device
/// (authorised by the device's token) or session (authorised by the pairing secret) on a relay of the cluster, so it
/// already applies every change itself (`LIVERELAY_FOREGROUND_PUSH`).
///
/// `end`, alert-carrying updates and starts are never touched: only plain updates are redundant while the app is open.
public enum ForegroundPolicy: String, Sendable, Hashable, CaseIterable {
    /// Updates go at priority 5 (FCM `android.priority: normal`): they still arrive, without spending Apple's budget.
    case downgrade
    /// No update push at all (`skipped`, reason `Foreground`); when the app leaves, the latest state is pushed if a
    /// skip left the Lock Screen behind.
    case skip
    /// Presence is not tracked; pushes go as if no app were open.
    case off
}
