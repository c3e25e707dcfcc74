import LiveRelayCore

/// The answer to a `PATCH` of an activity or a channel: the record as written, and whether the write sends anything.
/// A state the record already holds, without an alert, sends nothing (as any SQL write of it): `push` says so, so that
/// a caller who changed only `staleDate` or `priority`, or wrote to an ended channel, is not left waiting for a push.
struct UpdateAnswer<Record: Encodable>: Encodable {
    let record: Record
    let push: UpdateEffect

    private enum CodingKeys: String, CodingKey { case push }

    /// The record's own fields, with `push` beside them.
    func encode(to encoder: any Encoder) throws {
        try record.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(push, forKey: .push)
    }
}
