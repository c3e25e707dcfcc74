import NIOCore

/// Whether an idle connection still answers. After `idle` with nothing read and no request open, the connection sends
/// a PING; when nothing is read within `answer` of it, the connection is dead and closes. (A connection whose network
/// path dropped while idle, behind a NAT that forgot it, say, would otherwise be found dead only by the next batch,
/// after its silence limit.) Requests in flight are the batch's to watch. A value the connection drives with the
/// loop's clock, so that its rules are tested alone.
struct HTTP2Liveness {
    enum Action: Equatable {
        case wait
        case ping
        case dead
    }

    let idle: TimeAmount
    let answer: TimeAmount
    private(set) var lastRead: NIODeadline
    private(set) var pingSent: NIODeadline?

    init(idle: TimeAmount, answer: TimeAmount, now: NIODeadline) {
        self.idle = idle
        self.answer = answer
        self.lastRead = now
    }

    /// How often the connection asks `check`.
    var checkEvery: TimeAmount { min(idle, answer) }

    /// A frame arrived: the connection is alive, and a PING in flight is answered.
    mutating func read(at now: NIODeadline) {
        lastRead = now
        pingSent = nil
    }

    mutating func check(at now: NIODeadline, requestsOpen: Bool) -> Action {
        if let pingSent { return now - pingSent >= answer ? .dead : .wait }
        guard !requestsOpen, now - lastRead >= idle else { return .wait }
        pingSent = now
        return .ping
    }
}
