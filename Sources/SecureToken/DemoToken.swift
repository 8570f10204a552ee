import Foundation
import SecureCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// SoftHSM tokens in a local folder, for the demo and the tests. Never the system's token folder.
public enum DemoToken {
    /// The module p11-kit registers for SoftHSM.
    public static let moduleName = "softhsm2"

    /// Files of a demo token folder.
    public struct Layout: Sendable {
        public let directory: String
        public var configPath: String { directory + "/softhsm2.conf" }
        public var tokenDirectory: String { directory + "/tokens" }
        public func pinPath(label: String) -> String { directory + "/\(label).pin" }
        public func soPINPath(label: String) -> String { directory + "/\(label).so-pin" }

        public init(directory: String) {
            self.directory =
                directory.hasPrefix("/")
                ? directory
                : FileManager.default.currentDirectoryPath + "/" + directory
        }
    }

    /// What `init-demo` made.
    public struct Created: Sendable {
        public let uri: PKCS11URI
        public let pinPath: String
        public let configPath: String
    }

    /// Writes the SoftHSM config for a folder and points this process at it. It must run before SoftHSM
    /// is initialized in this process: SoftHSM reads SOFTHSM2_CONF only in C_Initialize.
    public static func prepare(_ layout: Layout) throws {
        try FileManager.default.createDirectory(
            atPath: layout.tokenDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let config = """
            # SoftHSM configuration written by `secure token init-demo`. Demo and test tokens only.
            directories.tokendir = \(layout.tokenDirectory)
            objectstore.backend = file
            log.level = ERROR
            slots.removable = false

            """
        if (try? String(contentsOfFile: layout.configPath, encoding: .utf8)) != config {
            try config.write(toFile: layout.configPath, atomically: true, encoding: .utf8)
        }
        setenv("SOFTHSM2_CONF", layout.configPath, 1)
    }

    /// Initializes a new SoftHSM token with a random user PIN and SO PIN, written to files of mode 0600
    /// in the folder. No default PIN exists anywhere.
    public static func create(_ layout: Layout, label: String) throws -> Created {
        try prepare(layout)
        guard !label.isEmpty, label.utf8.count <= 32 else {
            throw TokenError(.invalidURI, "a token label is 1 to 32 bytes")
        }
        let module = try TokenLibrary.shared.module(named: moduleName)
        for slot in try module.slotsWithTokens() where try module.tokenInfo(slot).label == label {
            if try module.tokenInfo(slot).flags & TokenFlag.tokenInitialized != 0 {
                throw TokenError(.ambiguous, "a token labelled \"\(label)\" already exists in \(layout.directory)")
            }
        }
        guard
            let freeSlot = try module.allSlots().first(where: { slot in
                (try? module.tokenInfo(slot).flags & TokenFlag.tokenInitialized == 0) ?? false
            })
        else {
            throw TokenError(.tokenNotFound, "SoftHSM offers no free slot in \(layout.directory)")
        }
        let userPIN = randomDigits(8), soPIN = randomDigits(12)
        try writeSecret(userPIN, to: layout.pinPath(label: label))
        try writeSecret(soPIN, to: layout.soPINPath(label: label))
        let so = try PIN(soPIN), user = try PIN(userPIN)
        try module.initToken(freeSlot, soPIN: so, label: label)
        // SoftHSM moves the new token to a slot of its own, so look it up again by label.
        guard let slot = try module.slotsWithTokens().first(where: { try module.tokenInfo($0).label == label }) else {
            throw TokenError(.tokenNotFound, "SoftHSM did not show the new token \"\(label)\"")
        }
        let session = try module.openSession(slot, readWrite: true)
        defer { session.close() }
        try check("C_Login (SO)", try session.login(userType: CK.userSO, pin: so))
        defer { session.logout() }
        try session.initPIN(user)
        var uri = PKCS11URI()
        uri.token = label
        uri.moduleName = moduleName
        return Created(uri: uri, pinPath: layout.pinPath(label: label), configPath: layout.configPath)
    }

    private static func randomDigits(_ count: Int) -> String {
        // Rejection sampling keeps the digits uniform (250 = 25 · 10).
        var digits = ""
        while digits.count < count {
            for byte in SystemRandom.bytes(count) where byte < 250 && digits.count < count {
                digits.append(Character(String(byte % 10)))
            }
        }
        return digits
    }

    private static func writeSecret(_ text: String, to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw TokenError(.pinUnavailable, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let bytes = Array((text + "\n").utf8)
        guard Glibc.write(descriptor, bytes, bytes.count) == bytes.count else {
            throw TokenError(.pinUnavailable, "cannot write \(path)")
        }
    }
}
