/// How many rows a delivery worker's next general claim may take.
///
/// A claim's time grows with its rows (in B9, ~20-30 ms for 500 channel rows), and no push of a batch leaves before its
/// claim ends. So a worker that has been waiting claims a small first batch: the first pushes of a bulk write leave
/// after a short claim, and the claim coming back full rings the other workers, which start beside it. A worker that
/// goes on at once after a batch (there is more) claims full batches, as many rows per round trip as it may.
public struct BatchLimit: Sendable, Equatable {
    /// The most rows a first batch takes.
    public static let firstBatchRows = 64

    /// Rows per batch when the worker goes on (`LIVERELAY_BATCH_SIZE`).
    public let batchSize: Int
    /// The limit of the next claim.
    public private(set) var rows: Int

    /// A worker starts as one that has been waiting.
    public init(batchSize: Int) {
        self.batchSize = batchSize
        rows = min(Self.firstBatchRows, batchSize)
    }

    /// The worker goes on at once after a batch: the next claim may take a full batch.
    public mutating func wentOn() {
        rows = batchSize
    }

    /// The worker waited for its doorbell: its next claim is a first batch again.
    public mutating func waited() {
        rows = min(Self.firstBatchRows, batchSize)
    }
}
