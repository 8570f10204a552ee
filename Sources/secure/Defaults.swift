import CommandLineSupport
import Foundation

/// Less to type: SECURE_WALLET and SECURE_PIN_SOURCE, and a config file at $XDG_CONFIG_HOME/secure/config
/// (default ~/.config/secure/config) holding the same keys, one `KEY=VALUE` a line (`#` starts a comment).
/// A flag wins over the environment, and the environment over the file. The file names where the wallet is
/// and how its PIN is read, so it must be the user's own and writable by no one else, as ssh asks of its
/// config.
enum Defaults {
    /// The keys, and the option each one fills.
    static let keys: [String: String] = ["SECURE_WALLET": "wallet", "SECURE_PIN_SOURCE": "pin-source"]

    static var configPath: String {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (NSHomeDirectory() + "/.config")
        return base + "/secure/config"
    }

    /// The local time zone for dates shown and read: $TZ when set (an IANA name, with or without a leading
    /// ":", or a path into a zoneinfo folder), else the system's. A TZ that names no zone this machine knows
    /// is refused rather than read as UTC, and a POSIX rule such as "UTC+5" is refused because Foundation reads
    /// its sign backwards (POSIX "UTC+5" is five hours west of UTC; Foundation makes it GMT+05:00).
    static func localTimeZone() throws -> TimeZone {
        guard let value = ProcessInfo.processInfo.environment["TZ"], !value.isEmpty else { return TimeZone.current }
        var name = value.hasPrefix(":") ? String(value.dropFirst()) : value
        if name.hasPrefix("/"), let folder = name.range(of: "zoneinfo/") { name = String(name[folder.upperBound...]) }
        // Known to Foundation, or a file of the system's tz database (Etc/UTC, EST5EDT): never a POSIX rule.
        let inDatabase =
            !name.contains("..") && !name.hasPrefix("/")
            && FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/" + name)
        guard TimeZone.knownTimeZoneIdentifiers.contains(name) || inDatabase, let zone = TimeZone(identifier: name)
        else {
            throw UsageError(
                "TZ=\(value) is not an IANA time zone this machine knows; set TZ to one (e.g. Europe/Berlin, or "
                    + "Etc/GMT-5 for five hours east of UTC), or pass --utc where a command takes it")
        }
        return zone
    }

    /// Fills `Arguments.defaults`; a malformed or unsafe config file is a usage error naming it.
    static func load() throws {
        var values: [String: String] = [:]
        let path = configPath
        var status = stat()
        if stat(path, &status) == 0 {
            guard status.st_uid == getuid() || status.st_uid == 0 else {
                throw UsageError(
                    "the config file \(path) belongs to user \(status.st_uid), not to you; remove it or make it yours")
            }
            guard status.st_mode & 0o022 == 0 else {
                throw UsageError("others may write the config file \(path); run `chmod go-w \(path)`")
            }
            let text = try String(contentsOfFile: path, encoding: .utf8)
            for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.isEmpty || line.hasPrefix("#") { continue }
                let parts = line.split(separator: "=", maxSplits: 1).map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                guard parts.count == 2, let option = keys[parts[0]], !parts[1].isEmpty else {
                    throw UsageError(
                        "\(path) line \(number + 1): expected KEY=VALUE with KEY one of "
                            + keys.keys.sorted().joined(separator: ", "))
                }
                values[option] = parts[1]
            }
        }
        for (key, option) in keys {
            if let value = ProcessInfo.processInfo.environment[key], !value.isEmpty { values[option] = value }
        }
        Arguments.defaults = values
    }
}
