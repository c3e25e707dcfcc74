extension RelayConfiguration {
    /// Reads the configuration. A missing or malformed setting throws a `ConfigurationError` naming it; several
    /// throw one `ConfigurationErrors` naming each. A refusal also says when a variable that is no setting looks like
    /// the one it names (`APNS_KEY_FILE` set, `APNS_PRIVATE_KEY_FILE` missing).
    /// - Parameter files: reads the files `*_FILE` variables name (Core reads none itself).
    public static func fromEnvironment(_ environment: [String: String], files: any ConfigurationFiles) throws
        -> RelayConfiguration {
        let unknown = SettingNames.unknown(in: environment)
        var (configuration, problems) = reading(environment, files: files)
        problems = problems.map { error in
            let misspelt = unknown.first { typo in
                guard let meant = typo.meant else { return false }
                return meant.hasPrefix(error.name) || error.name.hasPrefix(meant)
            }
            guard let misspelt, let meant = misspelt.meant else { return error }
            var hinted = error
            hinted.problem += "; \(misspelt.name) is set, which LiveRelay does not read: did you mean \(meant)?"
            return hinted
        }
        switch problems.count {
        case 0:
            configuration.unknownSettings = unknown
            return configuration
        case 1: throw problems[0]
        default: throw ConfigurationErrors(problems)
        }
    }
}
