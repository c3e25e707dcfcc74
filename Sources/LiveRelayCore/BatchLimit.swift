/// How many rows a worker's next claim may take: a delivery worker's general claim, or a webhook worker's.
///
/// A claim's time grows with its rows (in B9, ~20-30 ms for 500 channel rows), and no push of a batch leaves before its
/// claim ends. So a worker that has been waiting claims a small first batch: the first pushes of a bulk write leave
/// after a short claim, and the claim coming back full rings the other workers, which start beside it. A worker that
/// goes on at once after a batch (there is more) claims full batches, as many rows per round trip as it may.
public enum BatchLimit {
    /// The most rows a first batch takes.
    public static let firstBatchRows = 64

    /// The limit of the next claim: a first batch after a wait for the doorbell, else `batchSize`
    /// (`LIVERELAY_BATCH_SIZE`), and never more than `batchSize`.
    public static func rows(batchSize: Int, afterWait waited: Bool) -> Int {
        waited ? min(firstBatchRows, batchSize) : batchSize
    }
}
