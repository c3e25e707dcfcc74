extension RelayConfiguration {
    /// Reads the configuration; throws one clear error naming the first missing or malformed setting, and says when a
    /// variable that is no setting looks like the one it names (`APNS_KEY_FILE` set, `APNS_PRIVATE_KEY_FILE` missing).
    /// - Parameter files: reads the files `*_FILE` variables name (Core reads none itself).
    public static func fromEnvironment(_ environment: [String: String], files: any ConfigurationFiles) throws
        -> RelayConfiguration {
        let unknown = SettingNames.unknown(in: environment)
        do {
            var configuration = try reading(environment, files: files)
            configuration.unknownSettings = unknown
            return configuration
        } catch var error as ConfigurationError {
            let misspelt = unknown.first { typo in
                guard let meant = typo.meant else { return false }
                return meant.hasPrefix(error.name) || error.name.hasPrefix(meant)
            }
            if let misspelt, let meant = misspelt.meant {
                error.problem += "; \(misspelt.name) is set, which LiveRelay does not read: did you mean \(meant)?"
            }
            throw error
        }
    }
}
