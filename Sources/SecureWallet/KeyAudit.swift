import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

/// `secure keys audit`: every private key on the wallet's tokens, its attributes as the token reports them,
/// its origin (a verified PIV attestation, the module's word, or unproven), and its place in the wallet's
/// key-event log, as findings with a severity; and per token its PIN state, firmware and defaults. The JSON
/// form is documented in docs/PROTOCOL.md ("Key audit JSON") and docs/schemas; its format name changes with
/// any change of its shape, as every `--json` format's does (docs/JSON.md).
public enum KeyAudit {
    /// The format name written in the JSON. Version 2: findings scoped to wallet keys, origin instead of
    /// CKA_LOCAL, verified attestations, PIN and touch policy, per-token facts. Version 3: every key of
    /// `attributes` and of a verified attestation present, null when unreported (docs/JSON.md).
    public static let format = "secure-key-audit-v3"

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

    /// A key's attestation: what the token (or --attestation, or the wallet's kept evidence) offers to prove
    /// the key was made on it, and whether it verified.
    public struct Attestation: Codable, Equatable, Sendable {
        /// "not-offered" (the token has no attestation: SoftHSM, NSS, TPM), "missing" (a PIV key without
        /// one: imported, or OpenSC without --attestation), "verified", "invalid", or "attestation-key" (the
        /// card's F9 key, whose certificate signs the others).
        public let status: String
        public let detail: String
        /// The verified chain's facts, when `status` is "verified".
        public let verified: VerifiedAttestation?

        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(status, forKey: .status)
            try container.encode(detail, forKey: .detail)
            try container.encode(verified, forKey: .verified)
        }
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
        /// Whether this is the signing key in force.
        public let inForce: Bool
        /// Whether the key-event log names this key (as signing, next or agreement key).
        public let inKeyEventLog: Bool
        /// The sequence of the event that put it in force, for signing and retired keys.
        public let keySequence: UInt64?
        /// "attested", "module's word" or "unproven".
        public let origin: String
        /// The PIN and touch policy from the attestation (YubiKey extension 1.3.6.1.4.1.41482.3.8), or nil.
        public let pinPolicy: String?
        public let touchPolicy: String?
        /// The worst of the findings.
        public let severity: Severity
        public let findings: [Finding]
        public let attributes: PrivateKeyAttributes
        public let attestation: Attestation

        /// Every field always present (nil as null), so the shape is stable.
        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(token, forKey: .token)
            try container.encode(label, forKey: .label)
            try container.encode(id, forKey: .id)
            try container.encode(fingerprint, forKey: .fingerprint)
            try container.encode(role, forKey: .role)
            try container.encode(inForce, forKey: .inForce)
            try container.encode(inKeyEventLog, forKey: .inKeyEventLog)
            try container.encode(keySequence, forKey: .keySequence)
            try container.encode(origin, forKey: .origin)
            try container.encode(pinPolicy, forKey: .pinPolicy)
            try container.encode(touchPolicy, forKey: .touchPolicy)
            try container.encode(severity, forKey: .severity)
            try container.encode(findings, forKey: .findings)
            try container.encode(attributes, forKey: .attributes)
            try container.encode(attestation, forKey: .attestation)
        }
    }

    /// What an audit reports about a token itself.
    public struct TokenReport: Codable, Equatable, Sendable {
        public let label, manufacturer, model, serial: String
        /// CK_TOKEN_INFO's firmware and hardware versions ("major.minor"; ykcs11 reports firmware 5.4.3 as "5.43").
        public let firmwareVersion, hardwareVersion: String
        /// Whether the wallet treats it as a PIV token (origin by attestation).
        public let piv: Bool
        /// The PIN state from the token's flags: ok, count-low, final-try, locked, …
        public let pinState: String
        /// PIN tries left as far as the token says: "not reported" (no flag set), "fewer than the maximum"
        /// (CKF_USER_PIN_COUNT_LOW), "1" (CKF_USER_PIN_FINAL_TRY), "0" (CKF_USER_PIN_LOCKED). PKCS#11 has no count.
        public let pinTriesLeft: String
        public let severity: Severity
        public let findings: [Finding]
    }

    /// The factory defaults a PIV card ships with (SP 800-73 leaves them to the vendor; these are Yubico's).
    static let defaultPIVPIN = "123456"

    /// The audit of the tokens themselves: PIN state and tries, firmware, and defaults where detectable.
    public static func tokenReports(tokens: [TokenSession]) -> [TokenReport] {
        tokens.map { session in
            let token = session.token
            let state = (try? token.pinState) ?? .ok
            let tries: String
            switch state {
            case .countLow: tries = "fewer than the maximum"
            case .finalTry: tries = "1"
            case .locked: tries = "0"
            case .ok, .notInitialized, .notRequired: tries = "not reported"
            }
            var findings: [Finding] = []
            if token.isPIV {
                switch session.holdsPIN(defaultPIVPIN) {
                case true?:
                    findings.append(
                        Finding(
                            check: "default-pin", severity: .warning,
                            detail: "the PIN is the factory default 123456; change it (yubico-piv-tool -a change-pin)"))
                case false?:
                    findings.append(Finding(check: "default-pin", severity: .ok, detail: "not the factory default PIN"))
                case nil:
                    findings.append(
                        Finding(check: "default-pin", severity: .info, detail: "PIN not held: not compared"))
                }
                findings.append(
                    Finding(
                        check: "default-puk-management-key", severity: .info,
                        detail: "PUK and management key are not readable through PKCS#11; check with `ykman piv info`"))
            }
            if state == .countLow || state == .finalTry {
                findings.append(
                    Finding(
                        check: "pin-tries", severity: .warning,
                        detail: "wrong PINs were entered since the last good one (\(state.rawValue))"))
            }
            return TokenReport(
                label: token.label, manufacturer: token.manufacturer, model: token.model, serial: token.serial,
                firmwareVersion: token.firmwareVersion, hardwareVersion: token.hardwareVersion, piv: token.isPIV,
                pinState: state.rawValue, pinTriesLeft: tries, severity: findings.map(\.severity).max() ?? .ok,
                findings: findings)
        }
    }

    /// The audit of the keys on `tokens` against `log`; rows sorted by token, label and id.
    /// `recipients` are the wrapped database key's recipients (the backup token's key-agreement key is one,
    /// though no key event names it). `evidence` holds attestation certificates kept beside the wallet.
    public static func audit(
        tokens: [TokenSession], log: KeyEventLog, recipients: Set<P256.PublicKey> = [],
        evidence: [X509Certificate] = []
    ) throws -> [Row] {
        var rows: [Row] = []
        for session in tokens {
            let piv = session.token.isPIV
            let offered =
                piv
                ? ((try? session.attestationCertificates()) ?? []) + evidence + session.policy.attestation.offered : []
            for key in try session.keys() {
                let attributes = try session.attributes(of: key.uri)
                let attestation =
                    piv
                    ? pivAttestation(of: key, certificates: offered, sources: session.policy.attestation)
                    : Attestation(status: "not-offered", detail: "the token offers no key attestation", verified: nil)
                rows.append(
                    row(
                        key, token: session.token.label, piv: piv, attributes: attributes, attestation: attestation,
                        log: log, recipients: recipients))
            }
        }
        return rows.sorted { ($0.token, $0.label, $0.id) < ($1.token, $1.label, $1.id) }
    }

    static func pivAttestation(of key: TokenKey, certificates: [X509Certificate], sources: AttestationSources)
        -> Attestation
    {
        // The card's own attestation key (F9): its certificate signs the slots' attestations; nothing attests it.
        if let own = certificates.first(where: { $0.publicKeySPKI == key.publicKey.spki }),
            certificates.contains(where: { $0 !== own && $0.isIssued(by: own) })
        {
            return Attestation(
                status: "attestation-key",
                detail: "the card's attestation key (F9): its certificate signs the slots' attestations", verified: nil)
        }
        do {
            guard
                let verified = try PIVAttestation.verify(
                    key: key.publicKey, certificates: certificates, sources: sources)
            else {
                return Attestation(
                    status: "missing",
                    detail: "no attestation of this key (an imported key has none; through OpenSC pass --attestation)",
                    verified: nil)
            }
            return Attestation(status: "verified", detail: "chains to \(verified.root)", verified: verified)
        } catch {
            return Attestation(status: "invalid", detail: "\(error)", verified: nil)
        }
    }

    static func row(
        _ key: TokenKey, token: String, piv: Bool, attributes: PrivateKeyAttributes, attestation: Attestation,
        log: KeyEventLog, recipients: Set<P256.PublicKey>
    ) -> Row {
        var (role, sequence) = role(of: key.publicKey, in: log)
        if role == .unknown && recipients.contains(key.publicKey) { role = .agreement }
        var findings = attributeFindings(attributes, role: role, piv: piv)
        let origin = originFinding(attributes, piv: piv, attestation: attestation)
        findings.append(origin.finding)
        switch role {
        case .unknown:
            findings.append(
                Finding(
                    check: "key-event-log", severity: .info,
                    detail: "not a wallet key: the key-event log does not name it (or an interrupted rotation left it)")
            )
        case .retired:
            findings.append(
                Finding(
                    check: "retired", severity: .info,
                    detail:
                        "retired by a rotation; kept for verification, never signs again (`--destroy-old` deletes it)"))
        case .agreement
        where log.events.allSatisfy({ !$0.event.kind.isKeyBearing || $0.event.agreementKey != key.publicKey }):
            findings.append(
                Finding(
                    check: "key-event-log", severity: .ok, detail: "a recipient of the wrapped database key (backup)"))
        case .signing, .next, .agreement:
            findings.append(
                Finding(
                    check: "key-event-log", severity: .ok,
                    detail: "named by the key-event log as the \(role.rawValue) key"))
        }
        // Findings are about wallet keys: a key the wallet does not use (a PIV card's F9 attestation key,
        // another slot, another program's key) is reported, never flagged above INFO.
        if role == .unknown {
            findings = findings.map {
                Finding(check: $0.check, severity: min($0.severity, .info), detail: $0.detail)
            }
        }
        let severity = findings.map(\.severity).max() ?? .ok
        return Row(
            token: token, label: key.label, id: Hex.encode(key.id), fingerprint: Hex.encode(key.publicKey.fingerprint),
            role: role, inForce: role == .signing, inKeyEventLog: role != .unknown, keySequence: sequence,
            origin: origin.name, pinPolicy: attestation.verified?.pinPolicy,
            touchPolicy: attestation.verified?.touchPolicy, severity: severity, findings: findings,
            attributes: attributes, attestation: attestation)
    }

    static func role(of key: P256.PublicKey, in log: KeyEventLog) -> (Role, UInt64?) {
        if let event = log.event(for: key) {
            return (event.sequence == log.current.sequence ? .signing : .retired, event.sequence)
        }
        if key.fingerprintDigest == log.current.nextKeyDigest { return (.next, nil) }
        if log.events.contains(where: { $0.event.kind.isKeyBearing && $0.event.agreementKey == key }) {
            return (.agreement, nil)
        }
        return (.unknown, nil)
    }

    /// The origin check. On a PIV token only a verified attestation proves it (CKA_LOCAL is not evidence
    /// there); elsewhere the module's word (CKA_LOCAL and CKA_NEVER_EXTRACTABLE) is all there is, at INFO.
    /// CKA_LOCAL false means the origin is unproven, not that the key was imported: a warning.
    static func originFinding(_ a: PrivateKeyAttributes, piv: Bool, attestation: Attestation)
        -> (name: String, finding: Finding)
    {
        if piv {
            if let verified = attestation.verified {
                let facts = [
                    verified.serial.map { "serial \($0)" }, verified.firmware.map { "firmware \($0)" },
                    verified.pinPolicy.map { "PIN policy \($0)" }, verified.touchPolicy.map { "touch policy \($0)" },
                ].compactMap { $0 }
                return (
                    "attested",
                    Finding(
                        check: "origin", severity: .ok,
                        detail: "attested: generated on the card (\(([verified.root] + facts).joined(separator: ", ")))"
                    )
                )
            }
            return (
                "unproven",
                Finding(
                    check: "origin", severity: .warning,
                    detail: "origin unproven: attestation \(attestation.status): \(attestation.detail)")
            )
        }
        if a.local == true && a.neverExtractable == true {
            return (
                "module's word",
                Finding(
                    check: "origin", severity: .info,
                    detail: "origin: module's word, unattested (CKA_LOCAL, CKA_NEVER_EXTRACTABLE)")
            )
        }
        return (
            "unproven",
            Finding(
                check: "origin", severity: .warning,
                detail: "origin unproven: the token does not report the key as generated on it (CKA_LOCAL "
                    + (a.local.map { $0 ? "true" : "false" } ?? "not reported") + ")")
        )
    }

    /// The attribute checks. A key that was ever extractable or not sensitive has existed outside the token:
    /// critical. Wider usage than the role needs, or a signing key without always-authenticate: a warning,
    /// except that a PIV card fixes its keys' usages (9C and 9D may decrypt), which is reported at INFO.
    static func attributeFindings(_ a: PrivateKeyAttributes, role: Role, piv: Bool) -> [Finding] {
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
            "usage", wide.isEmpty, piv ? .info : .warning,
            "usage wider than needed: " + wide.joined(separator: ", ")
                + (piv ? " (fixed by the PIV card: no way to narrow it)" : ""),
            "usage limited to " + (role == .agreement ? "derive" : "sign"))
        return findings
    }
}

extension Wallet {
    /// The attestation certificates kept beside the wallet (attestations/*.pem), for audits through modules
    /// that offer none (OpenSC). Unreadable files are skipped; the audit verifies what it finds.
    public func keptAttestationCertificates() -> [X509Certificate] { Self.keptAttestationCertificates(paths) }

    /// The attestation certificates kept in a wallet folder, before the wallet is open.
    static func keptAttestationCertificates(_ paths: WalletPaths) -> [X509Certificate] {
        let folder = paths.attestations
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter {
            $0.hasSuffix(".pem")
        }
        return names.sorted().prefix(Self.keptAttestationCountMax).flatMap { name -> [X509Certificate] in
            guard let data = FileManager.default.contents(atPath: folder + "/" + name) else { return [] }
            return (try? X509Certificate.certificates(pem: String(decoding: data, as: UTF8.self))) ?? []
        }
    }

    /// At most this many kept attestation files are read: two per key put in force (1024 events at most)
    /// is far more than any wallet rotates.
    static let keptAttestationCountMax = 4096

    /// The public keys the database key is wrapped to (keys.bin).
    public func databaseKeyRecipients() throws -> Set<P256.PublicKey> {
        guard let bytes = FileManager.default.contents(atPath: paths.wrappedKey) else { return [] }
        return Set(try WrappedKeyFile(encoded: Array(bytes)).recipients.map(\.recipientKey))
    }
}
