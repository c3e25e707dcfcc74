import Foundation
import Testing
@testable import LiveRelayPostgres

/// The record of a batch is sent as one of two prepared statements whose text is fixed when the relay starts: that
/// holds only while `RecordCall` writes the same text for every batch of a shape, whatever it holds.
@Suite("Record call")
struct RecordCallTests {
    @Test("a batch with rows, retries and sent states writes the prepared statements' text, one bind per argument")
    func textIsFixedPerShape() {
        var outcome = BatchOutcome()
        outcome.finishedRowIDs = [1, 2]
        outcome.retries = [.init(rowID: 3, delaySeconds: 1.5, error: "503 ServiceUnavailable")]
        outcome.sentStates = [.init(activityID: UUID(), timestamp: 1_800_000_000, stateHash: "h", priority10: true)]
        outcome.createdChannels = [.init(channelID: UUID(), apnsChannelID: "c", bundleID: "b", environment: .sandbox)]
        var call = RecordCall()
        call.batch(outcome)
        #expect(call.query.sql == RecordBatchStatement.sql)
        #expect(call.query.binds.count == 28)
        call.channels(outcome)
        #expect(call.query.sql == RecordChannelsStatement.sql)
        #expect(call.query.binds.count == 51)
    }
}
