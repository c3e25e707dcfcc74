import LiveRelayCore
import Testing

/// The size of a delivery worker's claims: small after a wait, full while it goes on.
@Suite("Batch limit")
struct BatchLimitTests {
    @Test("a worker that waited claims a first batch of 64; one that goes on, a full batch; waiting again, 64")
    func firstThenFull() {
        var limit = BatchLimit(batchSize: 500)
        #expect(limit.rows == 64)
        limit.wentOn()
        #expect(limit.rows == 500)
        limit.wentOn()
        #expect(limit.rows == 500)
        limit.waited()
        #expect(limit.rows == 64)
    }

    @Test("a batch size below 64 is never exceeded, first batch or not")
    func smallBatchSize() {
        var limit = BatchLimit(batchSize: 10)
        #expect(limit.rows == 10)
        limit.wentOn()
        #expect(limit.rows == 10)
        limit.waited()
        #expect(limit.rows == 10)
    }
}
