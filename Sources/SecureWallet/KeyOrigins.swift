import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

// Key origin at `wallet init` and `keys rotate` (docs/THREAT-MODEL.md, "Key origin"): each key the wallet
// will sign or unwrap with is checked where it is chosen, and the key event that puts a signing key in force
// records its origin. A PIV key's attestation (the slot certificate and the F9 certificate) is kept beside
// the wallet as attestations/DIGEST.pem, so `keys audit` and an auditor can check the event's digest later.

extension KeyOriginReport {
    /// The origin as a version 2 key event records it.
    public var recorded: KeyOrigin {
        switch self {
        case .attested(let attestation):
            guard let digest = Digest32(hex: attestation.digest) else {
                preconditionFailure("a verified attestation's digest is 32 bytes of hex")
            }
            return .attested(digest)
        case .modulesWord: return .modulesWord
        case .unproven: return .unproven
        }
    }
}

extension WalletPaths {
    /// The folder of the PIV attestations that key events name by digest.
    public var attestations: String { directory + "/attestations" }

    /// The evidence file of an attested key event: the slot attestation certificate and the F9 certificate.
    public func attestation(digest: Digest32) -> String { attestations + "/\(digest.hex).pem" }
}

extension Wallet {
    /// Checks where a key came from (refusing an unproven one unless the token's policy allows it) and keeps
    /// the attestation's evidence beside the wallet.
    static func checkedOrigin(
        of key: TokenKey, on token: WalletToken, what: String, paths: WalletPaths
    ) throws -> KeyOriginReport {
        let report = try token.requireOrigin(of: key, what: what)
        if case .attested(let attestation) = report, case .attested(let digest) = report.recorded {
            try FileManager.default.createDirectory(
                atPath: paths.attestations, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try DurableFile.write(Array(attestation.evidencePEM.utf8), to: paths.attestation(digest: digest))
        }
        return report
    }
}
