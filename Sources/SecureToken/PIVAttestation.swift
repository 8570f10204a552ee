import Foundation
import SecureCrypto

/// Where a PIV key's attestation may come from, besides the token itself, and the roots it must chain to.
/// `--attestation FILE` fills `offered` (the PEM output of `yubico-piv-tool -a attest`, one per slot, with
/// the F9 certificate); `--attestation-root PEM` adds its self-signed certificates to `roots` and the rest to
/// `intermediates`. The roots shipped in the binary (`AttestationRoots`) are always trusted.
public struct AttestationSources: Sendable, Equatable {
    /// Certificates given with the key (slot attestation certificates and the F9 certificate).
    public var offered: [X509Certificate]
    /// Trusted self-signed roots.
    public var roots: [X509Certificate]
    /// Certificates that may stand between the F9 certificate and a root.
    public var intermediates: [X509Certificate]

    /// Only the shipped roots; nothing offered.
    public static let shipped = AttestationSources(offered: [], roots: AttestationRoots.shipped, intermediates: [])

    public init(offered: [X509Certificate], roots: [X509Certificate], intermediates: [X509Certificate]) {
        self.offered = offered
        self.roots = roots
        self.intermediates = intermediates
    }

    /// The shipped roots, plus the certificates of `attestationFile` (offered) and of `rootFile` (each
    /// self-signed one a root, the others intermediates). Files are PEM.
    public static func load(attestationFile: String?, rootFile: String?) throws -> AttestationSources {
        var sources = AttestationSources.shipped
        func certificates(_ path: String, _ what: String) throws -> [X509Certificate] {
            guard let data = FileManager.default.contents(atPath: path), data.count <= Self.fileByteCountMax else {
                throw TokenError(.keyRefused, "the \(what) file \(path) cannot be read, or is over 256 KiB")
            }
            let found = try X509Certificate.certificates(pem: String(decoding: data, as: UTF8.self))
            guard !found.isEmpty else {
                throw TokenError(.keyRefused, "the \(what) file \(path) holds no PEM certificate")
            }
            return found
        }
        if let attestationFile { sources.offered = try certificates(attestationFile, "attestation") }
        if let rootFile {
            for certificate in try certificates(rootFile, "attestation root") {
                if certificate.isIssued(by: certificate) {
                    sources.roots.append(certificate)
                } else {
                    sources.intermediates.append(certificate)
                }
            }
        }
        return sources
    }

    /// The largest attestation or root file read: a chain is a few KiB.
    static let fileByteCountMax = 256 * 1024

    public static func == (lhs: AttestationSources, rhs: AttestationSources) -> Bool {
        lhs.offered.map(\.der) == rhs.offered.map(\.der) && lhs.roots.map(\.der) == rhs.roots.map(\.der)
            && lhs.intermediates.map(\.der) == rhs.intermediates.map(\.der)
    }
}

/// A PIV key's attestation after it was verified: the chain from the slot's attestation certificate through
/// the F9 certificate (and any intermediates) to a trusted root, and Yubico's extensions.
public struct VerifiedAttestation: Sendable, Codable, Equatable {
    /// Hex SHA-256 of the evidence: u16 length ‖ slot certificate DER ‖ u16 length ‖ F9 certificate DER.
    /// The key event records this digest (docs/PROTOCOL.md, "Key events").
    public let digest: String
    /// The slot attestation certificate's subject ("CN=YubiKey PIV Attestation 9c").
    public let subject: String
    /// The card's serial (.3.7), firmware (.3.3), PIN and touch policy (.3.8) where present.
    public let serial: UInt64?
    public let firmware: String?
    public let pinPolicy: String?
    public let touchPolicy: String?
    /// The root the chain ends at, and the SHA-256 of its DER encoding.
    public let root: String
    public let rootSHA256: String
    /// Certificates in the chain, slot certificate and root included.
    public let chainLength: Int
    /// The slot certificate and the F9 certificate as PEM: the evidence the digest covers. Kept beside the
    /// wallet (attestations/DIGEST.pem) so an auditor can check the key event later; not in JSON output.
    public let evidencePEM: String

    enum CodingKeys: String, CodingKey {
        case digest, subject, serial, firmware, pinPolicy, touchPolicy, root, rootSHA256, chainLength
    }

    /// Every field always present, null when the certificate has no such extension (`keys audit --json`
    /// keeps one shape, docs/JSON.md); the evidence itself is not written.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(digest, forKey: .digest)
        try container.encode(subject, forKey: .subject)
        try container.encode(serial, forKey: .serial)
        try container.encode(firmware, forKey: .firmware)
        try container.encode(pinPolicy, forKey: .pinPolicy)
        try container.encode(touchPolicy, forKey: .touchPolicy)
        try container.encode(root, forKey: .root)
        try container.encode(rootSHA256, forKey: .rootSHA256)
        try container.encode(chainLength, forKey: .chainLength)
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        digest = try container.decode(String.self, forKey: .digest)
        subject = try container.decode(String.self, forKey: .subject)
        serial = try container.decodeIfPresent(UInt64.self, forKey: .serial)
        firmware = try container.decodeIfPresent(String.self, forKey: .firmware)
        pinPolicy = try container.decodeIfPresent(String.self, forKey: .pinPolicy)
        touchPolicy = try container.decodeIfPresent(String.self, forKey: .touchPolicy)
        root = try container.decode(String.self, forKey: .root)
        rootSHA256 = try container.decode(String.self, forKey: .rootSHA256)
        chainLength = try container.decode(Int.self, forKey: .chainLength)
        evidencePEM = ""
    }

    init(
        digest: String, subject: String, serial: UInt64?, firmware: String?, pinPolicy: String?,
        touchPolicy: String?, root: String, rootSHA256: String, chainLength: Int, evidencePEM: String
    ) {
        (self.digest, self.subject, self.serial, self.firmware) = (digest, subject, serial, firmware)
        (self.pinPolicy, self.touchPolicy, self.root, self.rootSHA256) = (pinPolicy, touchPolicy, root, rootSHA256)
        (self.chainLength, self.evidencePEM) = (chainLength, evidencePEM)
    }
}

/// Verifies PIV attestation chains. The walk is link by link, as scripts/oracles/piv_attestation.py does:
/// each certificate names its issuer and carries its signature, each is within its validity, and every
/// certificate above F9 is a CA. F9 itself is not asked to be a CA, because the slot certificate's only
/// possible issuer is the card's F9 key.
public enum PIVAttestation {
    /// Yubico's attestation extension arc, and its members.
    static let yubicoArc = "1.3.6.1.4.1.41482.3."
    static let firmwareOID = yubicoArc + "3", serialOID = yubicoArc + "7", policyOID = yubicoArc + "8"
    static let pinPolicies: [UInt8: String] = [1: "never", 2: "once", 3: "always"]
    static let touchPolicies: [UInt8: String] = [1: "never", 2: "always", 3: "cached"]
    /// Intermediates walked above F9 at most (Yubico's longest chain today has two), as in the oracle.
    public static let intermediateCountMax = 4
    /// The labels ykcs11 gives the F9 certificate and, with " 9c" etc. appended, each slot's attestation.
    static let ykcs11Label = "X.509 Certificate for PIV Attestation"

    /// The evidence digest: SHA-256 of u16 length ‖ slot certificate DER ‖ u16 length ‖ F9 certificate DER.
    public static func digest(slot: X509Certificate, f9: X509Certificate) -> [UInt8] {
        var bytes: [UInt8] = []
        for der in [slot.der, f9.der] {
            bytes += [UInt8(der.count >> 8), UInt8(der.count & 0xff)] + der
        }
        return SHA256.hash(bytes)
    }

    /// Finds, among `certificates`, the attestation of `key` and the F9 certificate that issued it, then
    /// verifies the chain to a root of `sources`. Throws `keyRefused` with the reason when the chain does not
    /// hold; returns nil when no certificate attests this key.
    public static func verify(
        key: P256.PublicKey, certificates: [X509Certificate], sources: AttestationSources, now: Date = Date()
    ) throws -> VerifiedAttestation? {
        guard let slot = certificates.first(where: { $0.publicKeySPKI == key.spki }) else { return nil }
        guard let f9 = certificates.first(where: { $0 !== slot && slot.isIssued(by: $0) }) else {
            throw refusal("no F9 certificate that signed the attestation of the key \(key.fingerprintHex) was given")
        }
        var chain = [slot, f9]
        var current = f9
        while true {
            if let root = sources.roots.first(where: { current.isIssued(by: $0) }) {
                chain.append(root)
                break
            }
            guard chain.count - 2 < intermediateCountMax,
                let next = sources.intermediates.first(where: { candidate in
                    candidate.isCA && !chain.contains { $0 === candidate } && current.isIssued(by: candidate)
                })
            else {
                throw refusal(
                    "the attestation of the key \(key.fingerprintHex) does not chain to a trusted root "
                        + "(\(current.subject) has no trusted issuer); pass the root and intermediates with "
                        + "--attestation-root PEM")
            }
            chain.append(next)
            current = next
        }
        for certificate in chain where !certificate.isValid(at: now) {
            throw refusal("the attestation chain's certificate \(certificate.subject) is not valid now")
        }
        guard let root = chain.last, root.isCA else { throw refusal("the attestation root is not a CA") }
        return try extensions(
            of: slot, digest: digest(slot: slot, f9: f9), root: root, chainLength: chain.count,
            evidencePEM: slot.pem + f9.pem)
    }

    /// Yubico's extensions of a verified slot certificate; a malformed one refuses the attestation.
    static func extensions(
        of slot: X509Certificate, digest: [UInt8], root: X509Certificate, chainLength: Int, evidencePEM: String
    ) throws -> VerifiedAttestation {
        var firmware: String?
        if let bytes = slot.extensionValue(oid: firmwareOID) {
            guard bytes.count == 3 else { throw refusal("the attestation's firmware extension is not 3 bytes") }
            firmware = bytes.map(String.init).joined(separator: ".")
        }
        var serial: UInt64?
        if let bytes = slot.extensionValue(oid: serialOID) {
            // A minimal non-negative DER INTEGER of at most 8 value bytes (a leading zero for the sign bit).
            guard bytes.count >= 3, bytes.count <= 11, bytes[0] == 0x02, Int(bytes[1]) == bytes.count - 2,
                bytes[2] & 0x80 == 0, bytes.count == 3 || bytes[2] != 0 || bytes[3] & 0x80 != 0,
                bytes.count - 2 <= 8 || bytes[2] == 0
            else { throw refusal("the attestation's serial extension is not a non-negative DER INTEGER") }
            serial = bytes.dropFirst(2).reduce(0) { $0 << 8 | UInt64($1) }
        }
        var pinPolicy: String?, touchPolicy: String?
        if let bytes = slot.extensionValue(oid: policyOID) {
            guard bytes.count == 2, let pin = pinPolicies[bytes[0]], let touch = touchPolicies[bytes[1]] else {
                throw refusal("the attestation's policy extension is not a known PIN and touch policy")
            }
            (pinPolicy, touchPolicy) = (pin, touch)
        }
        return VerifiedAttestation(
            digest: Hex.encode(digest), subject: slot.subject, serial: serial, firmware: firmware,
            pinPolicy: pinPolicy, touchPolicy: touchPolicy, root: root.subject,
            rootSHA256: Hex.encode(root.fingerprint), chainLength: chainLength, evidencePEM: evidencePEM)
    }

    static func refusal(_ message: String) -> TokenError { TokenError(.keyRefused, message) }
}

extension P256.PublicKey {
    /// The first 16 hex digits of the SPKI's SHA-256, for messages.
    var fingerprintHex: String { String(Hex.encode(fingerprint).prefix(16)) }
}

/// Where a key came from, as far as can be proven.
public enum KeyOriginReport: Sendable, Equatable {
    /// A PIV key whose attestation chain verified and attests this very public key.
    case attested(VerifiedAttestation)
    /// A key the module reports as generated on the token and never extractable (CKA_LOCAL and
    /// CKA_NEVER_EXTRACTABLE); nothing but the module's word backs it.
    case modulesWord
    /// Nothing proves where the key was made; the reason says why.
    case unproven(String)

    /// A short phrase for messages and audits.
    public var summary: String {
        switch self {
        case .attested(let attestation):
            "attested (chain to \(attestation.root), evidence SHA-256 \(attestation.digest.prefix(16))…)"
        case .modulesWord: "module's word, unattested"
        case .unproven(let reason): "unproven: \(reason)"
        }
    }
}

extension Token {
    /// Whether the token is a PIV card: its module or manufacturer says so (ykcs11 reports "Yubico", OpenSC's
    /// PIV driver "piv_II"). On PIV tokens CKA_LOCAL is not evidence: OpenSC 0.23 reports it true for every
    /// key without asking the card, so a key's origin is proven only by its attestation.
    public var isPIV: Bool {
        let text = [manufacturer, model].joined(separator: " ").lowercased()
        return text.contains("piv") || text.contains("yubico")
    }

    /// Whether the token is (or sits in a reader named as) a YubiKey.
    public var isYubiKey: Bool {
        [manufacturer, model, label, slotDescription].joined(separator: " ").lowercased().contains("yubi")
    }
}

extension TokenSession {
    /// The attestation certificates the token itself offers: through ykcs11, the F9 certificate and each
    /// slot's attestation certificate (labels "X.509 Certificate for PIV Attestation[ 9c]"). OpenSC offers
    /// none. Unparseable objects are skipped.
    public func attestationCertificates() throws -> [X509Certificate] {
        try withSessionForRSA { session in
            let handles = try session.findObjects([.number(Attribute.class, CK.classCertificate)])
            return try handles.compactMap { handle -> X509Certificate? in
                let label = String(decoding: try session.attribute(handle, Attribute.label) ?? [], as: UTF8.self)
                guard label.hasPrefix(PIVAttestation.ykcs11Label),
                    let der = try session.attribute(handle, Attribute.value)
                else { return nil }
                return try? X509Certificate(der: der)
            }
        }
    }

    /// Where `key` came from. On a PIV token CKA_LOCAL is ignored: the key is attested when the token's or the
    /// policy's attestation certificates verify for it (a broken chain is an error, not "unproven"), else its
    /// origin is unproven. Other tokens give the module's word when they report CKA_LOCAL and
    /// CKA_NEVER_EXTRACTABLE, else unproven.
    public func origin(of key: TokenKey) throws -> KeyOriginReport {
        if token.isPIV {
            let certificates = try attestationCertificates() + policy.attestation.offered
            guard
                let verified = try PIVAttestation.verify(
                    key: key.publicKey, certificates: certificates, sources: policy.attestation)
            else {
                return .unproven(
                    "the PIV token offers no attestation for this key (through OpenSC pass --attestation FILE: "
                        + "`yubico-piv-tool -a attest` of the slot and `-a read-certificate -s f9`)")
            }
            if token.manufacturer.lowercased().contains("yubico"), let serial = verified.serial,
                let tokenSerial = UInt64(token.serial), tokenSerial != serial
            {
                throw TokenError(
                    .keyRefused,
                    "the attestation is of card \(serial), but the key is on card \(tokenSerial)")
            }
            return .attested(verified)
        }
        let attributes = try self.attributes(of: key.uri)
        if attributes.local == true && attributes.neverExtractable == true { return .modulesWord }
        return .unproven(
            "the token does not report the key as generated on it and never extractable "
                + "(CKA_LOCAL \(attributes.local.map(String.init) ?? "not reported"), CKA_NEVER_EXTRACTABLE "
                + "\(attributes.neverExtractable.map(String.init) ?? "not reported"))")
    }

    /// Refuses a key whose origin is unproven unless the policy allows it (`--allow-unproven-origin`).
    /// Returns the origin for the key event.
    public func requireOrigin(of key: TokenKey, what: String) throws -> KeyOriginReport {
        let origin = try origin(of: key)
        if case .unproven(let reason) = origin, !policy.allowUnprovenOrigin {
            throw TokenError(
                .keyRefused,
                "the origin of \(what) on \"\(token.label)\" is unproven: \(reason). A key imported onto the token "
                    + "may exist elsewhere; --allow-unproven-origin accepts it anyway")
        }
        return origin
    }
}
