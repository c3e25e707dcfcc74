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

/// Several settings that stop start-up, named together so that one restart can fix them all: a line saying how many,
/// then one line for each, in the order the settings are read.
public struct ConfigurationErrors: Error, CustomStringConvertible, Equatable {
    public var errors: [ConfigurationError]
    public init(_ errors: [ConfigurationError]) {
        self.errors = errors
    }
    public var description: String {
        (["liverelay: \(errors.count) configuration errors:"] + errors.map { "  \($0.name) \($0.problem)" })
            .joined(separator: "\n")
    }
}
