import Crypto
import Foundation

/// One side of one channel: Apple's (`ios`) or the FCM topic (`android`). Its rows are sent one step at a time, in
/// order, by one worker of the cluster at a time (the claim's per-chain lock).
public struct ChannelChain: Sendable, Hashable {
    public var channelID: UUID
    public var platform: Platform

    public init(channelID: UUID, platform: Platform) {
        self.channelID = channelID
        self.platform = platform
    }
}

extension DeliveryPlanner {
    /// Seconds a broadcast stays stored at Apple for storage policy 1 (policy 0: `apns-expiration: 0`).
    public static let storedBroadcastSeconds: Int64 = 8 * 3600

    /// What one chain's rows (oldest first) come to in this batch: its first step (a burst of updates counts as
    /// one: the latest state), the rows that step settles without a request, and the rows left for the next batch.
    func planChannel(_ rows: [OutboxRow], chain: ChannelChain, snapshot: ChannelSnapshot?, now: Int64)
        -> (push: Push?, settled: [Settled], left: Int) {
        guard let head = rows.first else { return (nil, [], 0) }
        guard case .channel(let step) = head.event else {
            return (nil, [.init(row: head, status: .failed, reason: .malformedOutboxRow)], rows.count - 1)
        }
        let group = step == .update ? Array(rows.prefix { $0.event == .channel(.update) }) : [head]
        let left = rows.count - group.count
        let channel = snapshot ?? ChannelSnapshot(deleted: head)
        func settle(_ status: DeliveryStatus, _ reason: SettleReason) -> (Push?, [Settled], Int) {
            (nil, group.map { .init(row: $0, status: status, reason: reason, channel: channel?.name) }, left)
        }
        guard let channel else { return settle(.coalesced, .channelDeleted) }
        if chain.platform == .ios, step != .create, channel.apnsChannelID == nil {
            // Never created at Apple: nothing to send or delete there (a create that succeeds later queues the
            // channel's latest state itself, or its delete when the channel is gone by then).
            return settle(.coalesced, .awaitingChannel)
        }
        var content: LiveActivityContent?
        switch step {
        case .create:
            guard channel.apnsChannelID == nil else { return settle(.coalesced, .channelAlreadyCreated) }
            guard channel.status == .active else { return settle(.coalesced, .channelNotActive) }
        case .update, .end:
            if step == .update, channel.status != .active { return settle(.coalesced, .channelNotActive) }
            if step == .end, channel.status == .failed { return settle(.coalesced, .channelNotActive) }
            guard step == .end || channel.contentState != nil else { return settle(.coalesced, .channelNotActive) }
            content = LiveActivityContent(
                event: step == .end ? .end : .update, contentState: channel.contentState ?? .object([:]),
                staleDate: channel.staleDate, dismissalDate: channel.dismissalDate,
                relevanceScore: channel.relevanceScore)
        case .delete:
            break
        }
        let hash = content.map { Self.stateHash(of: $0, token: "channel:\(chain.platform.rawValue)") }
        if let hash, hash == channel.lastPayloadHash[chain.platform] {
            return settle(.coalesced, .sameStateAlreadySent)
        }
        let message = ChannelMessage(
            step: step, channelID: channel.id, name: channel.name, apnsChannelID: channel.apnsChannelID,
            fcmTopic: channel.fcmTopic, storagePolicy: channel.storagePolicy, content: content)
        let newestFirst = group.reversed() as [OutboxRow]
        var delivery = Delivery(
            platform: chain.platform, kind: .channel,
            token: chain.platform == .ios ? (channel.apnsChannelID ?? "") : channel.fcmTopic,
            content: .channel(message), priority: content == nil ? 10 : channel.priority,
            expiration: channel.storagePolicy == 0 ? 0 : now + Self.storedBroadcastSeconds,
            id: newestFirst[0].apnsID, bundleID: channel.bundleID, environment: channel.environment,
            timestamp: max(now, channel.lastTimestamp[chain.platform] ?? 0))
        delivery.priorityReason = .requested
        return (Push(delivery: delivery, rows: newestFirst, stateHash: hash, event: .channel(step)), [], left)
    }

    /// Plans every locked chain of `rows`; rows of chains another worker holds are left alone (not counted).
    func planChannels(_ rows: [OutboxRow], channels: [UUID: ChannelSnapshot], lockedChains: Set<ChannelChain>,
                      now: Int64, into plan: inout Plan) {
        var byChain: [ChannelChain: [OutboxRow]] = [:]
        var order: [ChannelChain] = []
        for row in rows where row.kind == .channel {
            guard let channelID = row.channelID else {
                plan.settled.append(.init(row: row, status: .failed, reason: .malformedOutboxRow))
                continue
            }
            let chain = ChannelChain(channelID: channelID, platform: row.platform)
            guard lockedChains.contains(chain) else { continue }
            if byChain[chain] == nil { order.append(chain) }
            byChain[chain, default: []].append(row)
        }
        for chain in order {
            let chainRows = byChain[chain]!.sorted { $0.id < $1.id }
            let (push, settled, left) = planChannel(chainRows, chain: chain, snapshot: channels[chain.channelID],
                                                    now: now)
            if let push { plan.pushes.append(push) }
            plan.settled += settled
            plan.left += left
        }
    }
}
