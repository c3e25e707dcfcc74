import LiveRelayCore
import Testing

/// The size of a delivery worker's claims: small after a wait, full while it goes on.
@Suite("Batch limit")
struct BatchLimitTests {
    @Test("a worker that waited claims a first batch of 64; one that goes on, a full batch")
    func firstThenFull() {
        #expect(BatchLimit.rows(batchSize: 500, afterWait: true) == 64)
        #expect(BatchLimit.rows(batchSize: 500, afterWait: false) == 500)
    }

    @Test("a batch size below 64 is never exceeded, first batch or not")
    func smallBatchSize() {
        #expect(BatchLimit.rows(batchSize: 10, afterWait: true) == 10)
        #expect(BatchLimit.rows(batchSize: 10, afterWait: false) == 10)
    }
}
