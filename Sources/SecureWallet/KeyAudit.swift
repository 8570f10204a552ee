import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

/// `secure keys audit`: every private key on the wallet's tokens, its attributes as the token reports them,
/// and its place in the wallet's key-event log, as findings with a severity. The JSON form is documented
/// in docs/PROTOCOL.md ("Key audit JSON") and is stable: fields are only ever added.
public enum KeyAudit {
    /// The format name written in the JSON.
    public static let format = "secure-key-audit-v1"

    /// How bad a finding is. Ordered: the worst finding is a key's severity.
    public enum Severity: String, Codable, Comparable, Sendable, CaseIterable {
        case ok, info, warning, critical

        public static func < (lhs: Severity, rhs: Severity) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// One finding: a stable check name, its severity and a sentence for a person.
    public struct Finding: Codable, Equatable, Sendable {
        public let check: String
        public let severity: Severity
        public let detail: String
    }

    /// What the token offers to prove a key was made on it. SoftHSM offers nothing; a PIV token's
    /// attestation certificate goes here (the token-matrix issue reads and verifies it).
    public struct Attestation: Codable, Equatable, Sendable {
        /// "not-offered", "unverified" (offered, no root supplied), "verified" or "invalid".
        public let status: String
        public let detail: String
    }

    /// The role a key plays for the wallet.
    public enum Role: String, Codable, Sendable {
        /// The signing key in force.
        case signing
        /// The committed next signing key (only its digest is in the log until it is put in force).
        case next
        /// A signing key retired by a rotation: kept for verification, never signs again.
        case retired
        /// A key-agreement key named by a key event, or a recipient of the wrapped database key.
        case agreement
        /// A key the wallet's key-event log does not name.
        case unknown
    }

    /// One audited key.
    public struct Row: Codable, Equatable, Sendable {
        public let token: String
        public let label: String
        /// Hex CKA_ID.
        public let id: String
        /// Hex SHA-256 of the SubjectPublicKeyInfo.
        public let fingerprint: String
        public let role: Role
        /// Whether the key-event log names this key (as signing, next or agreement key).
        public let inKeyEventLog: Bool
        /// The sequence of the event that put it in force, for signing and retired keys.
        public let keySequence: UInt64?
        /// The worst of the findings.
        public let severity: Severity
        public let findings: [Finding]
        public let attributes: PrivateKeyAttributes
        public let attestation: Attestation

        /// Every field always present (`keySequence` as null when there is none), so the shape is stable.
        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(token, forKey: .token)
            try container.encode(label, forKey: .label)
            try container.encode(id, forKey: .id)
            try container.encode(fingerprint, forKey: .fingerprint)
            try container.encode(role, forKey: .role)
            try container.encode(inKeyEventLog, forKey: .inKeyEventLog)
            try container.encode(keySequence, forKey: .keySequence)
            try container.encode(severity, forKey: .severity)
            try container.encode(findings, forKey: .findings)
            try container.encode(attributes, forKey: .attributes)
            try container.encode(attestation, forKey: .attestation)
        }
    }

    /// The audit of the keys on `tokens` against `log`; rows sorted by token, label and id.
    /// `recipients` are the wrapped database key's recipients (the backup token's key-agreement key is one,
    /// though no key event names it).
    public static func audit(tokens: [TokenSession], log: KeyEventLog, recipients: Set<P256.PublicKey> = []) throws
        -> [Row]
    {
        var rows: [Row] = []
        for session in tokens {
            for key in try session.keys() {
                let attributes = try session.attributes(of: key.uri)
                rows.append(
                    row(key, token: session.token.label, attributes: attributes, log: log, recipients: recipients))
            }
        }
        return rows.sorted { ($0.token, $0.label, $0.id) < ($1.token, $1.label, $1.id) }
    }

    static func row(
        _ key: TokenKey, token: String, attributes: PrivateKeyAttributes, log: KeyEventLog,
        recipients: Set<P256.PublicKey>
    ) -> Row {
        var (role, sequence) = role(of: key.publicKey, in: log)
        if role == .unknown && recipients.contains(key.publicKey) { role = .agreement }
        var findings = attributeFindings(attributes, role: role)
        switch role {
        case .unknown:
            findings.append(
                Finding(
                    check: "key-event-log", severity: .warning,
                    detail: "not in the wallet's key-event log: not a wallet key, or left by an interrupted rotation"))
        case .retired:
            findings.append(
                Finding(
                    check: "retired", severity: .info,
                    detail:
                        "retired by a rotation; kept for verification, never signs again (`--destroy-old` deletes it)"))
        case .agreement where log.events.allSatisfy({ $0.event.agreementKey != key.publicKey }):
            findings.append(
                Finding(
                    check: "key-event-log", severity: .ok, detail: "a recipient of the wrapped database key (backup)"))
        case .signing, .next, .agreement:
            findings.append(
                Finding(
                    check: "key-event-log", severity: .ok,
                    detail: "named by the key-event log as the \(role.rawValue) key"))
        }
        let severity = findings.map(\.severity).max() ?? .ok
        return Row(
            token: token, label: key.label, id: Hex.encode(key.id), fingerprint: Hex.encode(key.publicKey.fingerprint),
            role: role, inKeyEventLog: role != .unknown, keySequence: sequence, severity: severity,
            findings: findings, attributes: attributes,
            attestation: Attestation(status: "not-offered", detail: "the token offers no key attestation"))
    }

    static func role(of key: P256.PublicKey, in log: KeyEventLog) -> (Role, UInt64?) {
        if let event = log.event(for: key) {
            return (event.sequence == log.current.sequence ? .signing : .retired, event.sequence)
        }
        if key.fingerprintDigest == log.current.nextKeyDigest { return (.next, nil) }
        if log.events.contains(where: { $0.event.agreementKey == key }) { return (.agreement, nil) }
        return (.unknown, nil)
    }

    /// The attribute checks. A key that was ever extractable or not sensitive, or that was imported, has
    /// existed outside the token: critical. Wider usage than the role needs, or a signing key without
    /// always-authenticate: a warning.
    static func attributeFindings(_ a: PrivateKeyAttributes, role: Role) -> [Finding] {
        var findings: [Finding] = []
        func check(_ name: String, _ passes: Bool, _ severity: Severity, _ failure: String, _ success: String) {
            findings.append(Finding(check: name, severity: passes ? .ok : severity, detail: passes ? success : failure))
        }
        check(
            "sensitive", a.sensitive == true, .critical, "CKA_SENSITIVE is not set: the private key can be read",
            "sensitive")
        check(
            "extractable", a.extractable == false, .critical, "CKA_EXTRACTABLE is set: the key can be exported",
            "not extractable")
        check(
            "never-extractable", a.neverExtractable == true, .critical,
            "CKA_NEVER_EXTRACTABLE is not set: the key was extractable at some time", "never extractable")
        check(
            "always-sensitive", a.alwaysSensitive == true, .critical,
            "CKA_ALWAYS_SENSITIVE is not set: the key was readable at some time", "always sensitive")
        check(
            "local", a.local == true, .critical,
            "CKA_LOCAL is not set: the key was imported, not generated on the token",
            "generated on the token")
        let signs = role == .signing || role == .next || role == .retired
        if signs || role == .unknown {
            check(
                "always-authenticate", a.alwaysAuthenticate == true, .warning,
                "CKA_ALWAYS_AUTHENTICATE is not set: one login lets any program sign with it", "always-authenticate")
        }
        var wide: [String] = []
        if role != .agreement, a.derive == true { wide.append("derive") }
        if role == .agreement, a.sign == true { wide.append("sign") }
        if a.decrypt == true { wide.append("decrypt") }
        if a.unwrap == true { wide.append("unwrap") }
        if a.signRecover == true { wide.append("sign-recover") }
        check(
            "usage", wide.isEmpty, .warning, "usage wider than needed: " + wide.joined(separator: ", "),
            "usage limited to " + (role == .agreement ? "derive" : "sign"))
        return findings
    }
}

extension Wallet {
    /// The public keys the database key is wrapped to (keys.bin).
    public func databaseKeyRecipients() throws -> Set<P256.PublicKey> {
        guard let bytes = FileManager.default.contents(atPath: paths.wrappedKey) else { return [] }
        return Set(try WrappedKeyFile(encoded: Array(bytes)).recipients.map(\.recipientKey))
    }
}
