/// Why a request got no answer.
public enum HTTP2ClientError: Error, Sendable, CustomStringConvertible {
    /// No connection could be made (DNS, TCP, TLS).
    case connectFailed(String)
    /// The connection ended while the request was in flight: the server may or may not have it.
    case connectionClosed
    /// The server said it did not process the request (GOAWAY past it, `REFUSED_STREAM`): safe to send again at once.
    case notProcessed(String)
    /// The server reset the stream.
    case streamReset(String)
    /// The server answered none of the batch's requests for this long (or the batch reached its overall limit).
    case timedOut(seconds: Double)
    /// The answer broke HTTP/2.
    case protocolError(String)

    /// True when the server cannot have acted on the request.
    public var wasNotProcessed: Bool {
        if case .notProcessed = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .connectFailed(let why): return "cannot connect: \(why)"
        case .connectionClosed: return "the connection closed before the server answered"
        case .notProcessed(let why): return "not processed by the server (\(why))"
        case .streamReset(let code): return "the server reset the stream (\(code))"
        case .timedOut(let seconds): return "no answer for \(seconds) s"
        case .protocolError(let why): return "HTTP/2 error: \(why)"
        }
    }
}
