/// Why an operation of the store did not happen. Every case carries a sentence for a person or a model to read;
/// nothing was written when one is thrown.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No such device, activity or view.
    case notFound(String)
    /// A name or selector that matches more than one thing (the sentence lists them).
    case ambiguous(String)
    /// An argument that is missing, doubled or of the wrong shape.
    case invalidArgument(String)
    /// The database refused the write (a trigger's check, a constraint, a value it cannot read): its own message.
    case refused(String)
    /// The write conflicts with what it names: a row that must be unique exists, or the activity is not active.
    case conflict(String)
    /// The database did not answer in time, or (with `RelayStore.diagnose`) cannot be reached: why.
    case unavailable(String)

    public var message: String {
        switch self {
        case .notFound(let text), .ambiguous(let text), .invalidArgument(let text), .refused(let text),
             .conflict(let text), .unavailable(let text):
            return text
        }
    }

    public var description: String { message }
}
