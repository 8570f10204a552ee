import Foundation
import SecureCrypto

/// "Touch your key": before a signature or key agreement on a key that may wait for a touch, the process's
/// prompt (installed by the CLI, printing to stderr) is told, so a person knows why the session waits. A
/// key may need a touch when its PIV attestation says touch policy "always" or "cached", or when it is on a
/// YubiKey and its policy is unknown (no attestation to read). The card itself holds the operation until
/// the touch, for at most its own timeout (15 s on a YubiKey); the operation then fails and the caller's
/// deadline and error handling apply as for any token failure (docs/TOKENS.md, "Touch").
public enum TouchPrompt {
    /// What a key needs before the card signs with it.
    public enum Need: Sendable, Equatable {
        /// No touch (not a PIV token, or touch policy "never").
        case none
        /// Touch policy "always": every operation waits for a touch.
        case always
        /// Touch policy "cached": a touch serves the operations of the next 15 s.
        case cached
        /// A YubiKey key whose policy could not be read: it may wait.
        case unknown
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var handler: (@Sendable (String) -> Void)?
    /// Needs found so far, by token serial and key fingerprint: a PIV slot's touch policy is fixed when its
    /// key is made, and a new key has a new fingerprint.
    nonisolated(unsafe) private static var needs: [String: Need] = [:]
    /// The most keys whose need is remembered; beyond it the cache starts over (a process signs with few keys).
    static let rememberedCountMax = 256

    /// Installs the process's prompt; the CLI's writes to stderr, never to stdout (which may carry JSON).
    public static func install(_ prompt: @escaping @Sendable (String) -> Void) {
        lock.withLock { handler = prompt }
    }

    /// Tells the prompt, when the key may wait for a touch.
    static func announce(_ need: Need, token: Token, operation: String) {
        let text: String
        switch need {
        case .none: return
        case .always: text = "touch your key (\"\(token.label)\", touch policy always) to \(operation)"
        case .cached: text = "touch your key if it blinks (\"\(token.label)\", touch policy cached) to \(operation)"
        case .unknown: text = "touch your key if it blinks (\"\(token.label)\", touch policy unknown) to \(operation)"
        }
        let prompt = lock.withLock { handler }
        prompt?(text)
    }

    static func remembered(_ key: String) -> Need? { lock.withLock { needs[key] } }

    static func remember(_ need: Need, for key: String) {
        lock.withLock {
            if needs.count >= rememberedCountMax { needs = [:] }
            needs[key] = need
        }
    }

    /// Attestation certificates learnt from elsewhere (a wallet's kept attestations), searched after the
    /// token's own; at most `learntCountMax` are kept.
    nonisolated(unsafe) private static var learnt: [X509Certificate] = []
    static let learntCountMax = 64

    /// Adds certificates that may state keys' touch policies (a wallet's kept attestations).
    public static func learn(_ certificates: [X509Certificate]) {
        lock.withLock { learnt = Array((learnt + certificates).suffix(learntCountMax)) }
    }

    static var learntCertificates: [X509Certificate] { lock.withLock { learnt } }

    /// The touch policy in a key's attestation certificate (Yubico's extension .3.8, second byte), read
    /// without verifying the chain: it only decides whether to show the prompt.
    static func need(of key: P256.PublicKey, in certificates: [X509Certificate]) -> Need? {
        guard let certificate = certificates.first(where: { $0.publicKeySPKI == key.spki }),
            let policy = certificate.extensionValue(oid: PIVAttestation.policyOID), policy.count == 2
        else { return nil }
        switch policy[1] {
        case 1: return Need.none
        case 2: return .always
        case 3: return .cached
        default: return nil
        }
    }
}

extension TokenSession {
    /// Whether `key` may wait for a touch, from its attestation (the token's or --attestation's); computed
    /// once per key and process. Called before the session's lock is taken.
    func touchNeed(of key: TokenKey) -> TouchPrompt.Need {
        guard token.isPIV else { return .none }
        let cacheKey = token.serial + "/" + token.label + "/" + Hex.encode(key.publicKey.fingerprint)
        if let known = TouchPrompt.remembered(cacheKey) { return known }
        let certificates =
            ((try? attestationCertificates()) ?? []) + policy.attestation.offered + TouchPrompt.learntCertificates
        let need = TouchPrompt.need(of: key.publicKey, in: certificates) ?? (token.isYubiKey ? .unknown : .none)
        TouchPrompt.remember(need, for: cacheKey)
        return need
    }

    /// Shows the touch prompt before an operation with `key`, when it may need one.
    func announceTouch(for key: TokenKey, operation: String) {
        TouchPrompt.announce(touchNeed(of: key), token: token, operation: operation)
    }
}
