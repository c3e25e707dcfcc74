import Crypto
import Foundation
@testable import LiveRelayCore
import Testing

/// A variable named like a setting that is none (a misspelling) is named at start-up with what it likely means, and in
/// the error when the setting it stands for is missing, instead of being ignored without a word.
@Suite("Setting names")
struct SettingNamesTests {
    static let valid = [
        "DATABASE_URL": "postgres://u:p@localhost:5432/db", "APNS_TEAM_ID": "TEAM123456", "APNS_KEY_ID": "KEY1234567",
        "APNS_PRIVATE_KEY": P256.Signing.PrivateKey().pemRepresentation,
    ]

    @Test("the names the relay reads are exactly those the README's configuration table lists")
    func documented() throws {
        var url = URL(fileURLWithPath: #filePath)
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
            url.deleteLastPathComponent()
        }
        let readme = try String(contentsOf: url.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Commands and configuration").dropFirst().first?
            .components(separatedBy: "\n## ").first)
        var listed: Set<String> = []
        for row in section.split(separator: "\n") where row.hasPrefix("| `") {
            let firstCell = row.dropFirst(2).prefix { $0 != "|" }
            for match in firstCell.matches(of: /`([A-Z][A-Z0-9_]+)`/) { listed.insert(String(match.output.1)) }
        }
        #expect(listed == SettingNames.known, """
            only in the README: \(listed.subtracting(SettingNames.known).sorted()); \
            only in SettingNames: \(SettingNames.known.subtracting(listed).sorted())
            """)
    }

    @Test("serve --help names every setting once, each with what it sets on the line below")
    func help() {
        let named = SettingNames.lines.flatMap(\.names)
        #expect(named.count == Set(named).count, "a setting listed twice: \(named.sorted())")
        let lines = SettingNames.helpText.split(separator: "\n").map(String.init)
        for line in SettingNames.lines {
            let index = lines.firstIndex(of: line.names.joined(separator: ", "))
            #expect(index.map { lines[$0 + 1].hasPrefix("    " + line.meaning) } == true, "\(line.names)")
        }
    }

    @Test("a misspelt name is told with the setting it most likely means; others of ours without a guess; not others'")
    func misspellings() throws {
        let meant: [String: String?] = [
            "APNS_KEY_FILE": "APNS_PRIVATE_KEY_FILE",
            "APNS_TEAMID": "APNS_TEAM_ID",
            "FCM_SERVICE_ACCOUNT_JSON": "FCM_SERVICE_ACCOUNT",
            "LIVERELAY_PRIORITY_10_PER_HOUR": "LIVERELAY_PRIORITY10_PER_HOUR",
            "LIVERELAY_WORKER": "LIVERELAY_WORKERS",
            "LIVERELAY_WIDGET_MIN_INTERVALL": "LIVERELAY_WIDGET_MIN_INTERVAL",
            "APNS_TOPIC": nil,
            "FCM_KEY": nil,
        ]
        for (name, expected) in meant {
            #expect(SettingNames.meant(by: name) == expected, "\(name)")
        }
        var environment = Self.valid
        for name in meant.keys { environment[name] = "x" }
        environment["PATH"] = "/bin"
        environment["PGHOST"] = "db"
        environment["LIVERELAY_BINARY"] = "/tmp/liverelay"
        let configuration = try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        #expect(configuration.unknownSettings.map(\.name) == meant.keys.sorted())
        let sentences = configuration.unknownSettings.map(\.sentence)
        #expect(sentences.contains(
            "APNS_KEY_FILE is not a setting LiveRelay reads (did you mean APNS_PRIVATE_KEY_FILE?)"))
        #expect(sentences.contains("APNS_TOPIC is not a setting LiveRelay reads"))
        #expect(try RelayConfiguration.fromEnvironment(Self.valid, files: TestFiles()).unknownSettings.isEmpty)
    }

    @Test("the error for a missing setting names the misspelt variable given for it")
    func missingSettingNamesItsMisspelling() {
        var environment = Self.valid
        environment["APNS_PRIVATE_KEY"] = nil
        environment["APNS_KEY_FILE"] = "/keys/AuthKey.p8"
        environment["LIVERELAY_WORKER"] = "4"
        #expect {
            try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("liverelay: configuration error: APNS_PRIVATE_KEY is not set")
                && text.hasSuffix("; APNS_KEY_FILE is set, which LiveRelay does not read: did you mean "
                                  + "APNS_PRIVATE_KEY_FILE?")
        }
        environment["APNS_KEY_FILE"] = nil
        #expect {
            try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        } throws: { error in
            "\(error)".hasSuffix("give the .p8 key's PEM text")
        }
    }
}
