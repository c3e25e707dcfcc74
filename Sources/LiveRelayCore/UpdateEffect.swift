/// What a write to an activity or a channel sends: whether the phones will hear of it. The routes and MCP tools answer
/// it, so that a write that sends nothing says so rather than leaving its caller waiting for a push.
public enum UpdateEffect: String, Sendable, Hashable, CaseIterable, Codable {
    /// A push is on its way (now, or once the activity has its token or Apple has created the channel).
    case queued
    /// The content-state it already had, and no alert came with it: nothing to send.
    case unchanged
    /// The channel is (or was, before this write) ended, deleted or failed, and sends no more updates.
    case notActive

    /// What a channel's `UPDATE` queues, as the channel trigger decides it (`sql/050_channels.sql`): an update when an
    /// active channel's state changes, an `end` when it leaves `active`, a delete at Apple when an active or ended
    /// channel becomes `deleted`.
    public static func channel(before: ChannelStatus, after: ChannelStatus, stateChanged: Bool) -> UpdateEffect {
        switch (before, after) {
        case (.active, .active): stateChanged ? .queued : .unchanged
        case (.active, .ended), (.active, .deleted), (.ended, .deleted): .queued
        default: .notActive
        }
    }
}
