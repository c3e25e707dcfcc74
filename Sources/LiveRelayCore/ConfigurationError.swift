/// A setting that stops start-up; its description is the one line printed.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public var name: String
    public var problem: String
    public init(name: String, problem: String) {
        self.name = name
        self.problem = problem
    }
    public var description: String { "liverelay: configuration error: \(name) \(problem)" }
}
