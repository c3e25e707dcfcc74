import Foundation
import LiveRelayCore
import LiveRelayPostgres
import LiveRelayStore
import PostgresNIO
import Testing

/// What `PATCH /v1/channels/{name}` and the MCP tool `update_channel` say a write sends (`push`) is what the channel
/// trigger queues, for every status a channel can have before and after the write.
@Suite("Channel update effects")
struct ChannelUpdateEffectTests {
    @Test("queued is answered exactly when the trigger queued a send; unchanged and notActive when it queued none")
    func effectMatchesTrigger() async throws {
        try await Harness.with { h in
            let connector = try DatabaseConnector(url: h.databaseURL)
            let pool = PostgresClient(configuration: connector.clientConfiguration, backgroundLogger: h.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await pool.run() }
                let store = RelayStore(client: pool, logger: h.logger)
                var answered: [UpdateEffect: Int] = [:]
                for before in ChannelStatus.allCases {
                    for after in ChannelStatus.allCases {
                        for changed in [false, true] {
                            let name = "effect-\(before.rawValue)-\(after.rawValue)-\(changed)"
                            try await h.sql("""
                                INSERT INTO broadcast_channel (name, bundle_id, status, apns_channel_id, content_state)
                                VALUES (\(name), 'dev.liverelay.test', \(before.rawValue), 'apple-id', '{"n": 0}')
                                """)
                            let queued: PostgresQuery = """
                                SELECT count(*) FROM delivery_outbox o JOIN broadcast_channel c ON c.id = o.channel_id
                                WHERE c.name = \(name)
                                """
                            let queuedBefore = try await h.rows(queued, as: Int64.self)
                            let state: JSONValue = .object(["n": .integer(changed ? 1 : 0)])
                            let written: (previous: ChannelStatus, effect: UpdateEffect)
                            do {
                                let (_, previous, effect) = try await store.updateChannel(
                                    named: name, ChannelChange(contentState: state, status: after))
                                written = (previous, effect)
                            } catch {
                                Issue.record("\(name): \(String(reflecting: error))")
                                continue
                            }
                            let (previous, effect) = written
                            let queuedAfter = try await h.rows(queued, as: Int64.self)
                            #expect(previous == before)
                            #expect((effect == .queued) == (queuedAfter != queuedBefore), """
                                \(before) → \(after), state changed: \(changed): answered \(effect), \
                                queued \(queuedBefore) → \(queuedAfter)
                                """)
                            answered[effect, default: 0] += 1
                        }
                    }
                }
                // Each answer is met: the table above is not one answer throughout.
                #expect(Set(answered.keys) == Set(UpdateEffect.allCases), "\(answered)")
                group.cancelAll()
            }
        }
    }
}
