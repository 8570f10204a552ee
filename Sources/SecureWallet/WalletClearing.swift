import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

/// An issuer names its clearing (docs/CLEARING.md §1.1): a clearing delegation, key-event kind 3, appended to
/// its key-event log as its own ledger entry. The issuer key in force signs it and that entry's checkpoint; the
/// clearing key countersigns it (proof of possession). No key changes: `keyEvent` stays the event in force.
extension Wallet {
    /// Appends a clearing delegation naming `clearing`, countersigned by `clearingSigner` (whose key must be
    /// `clearing.clearingKey`). Refused in a wallet that is not an issuer, and by the rotation rules (a clearing
    /// key that is one of the issuer's own keys). Returns the event appended; `keyLog.clearingInForce` is then
    /// `clearing`.
    public func delegateClearing(_ clearing: ClearingDelegation, clearingSigner: MessageSigner) throws
        -> SignedKeyEvent
    {
        precondition(clearingSigner.publicKey == clearing.clearingKey, "the clearing key countersigns its delegation")
        guard keyLog.isIssuer else {
            throw WalletError(.refused, "only an issuer's wallet names a clearing (this wallet is not an issuer)")
        }
        if let lockReason { throw WalletError(.locked, "the wallet is locked and cannot delegate: \(lockReason)") }
        let issuerSigner = try signer
        let event = KeyEvent.clearingDelegation(
            after: keyLog.last, issuerKey: signingKey, clearing: clearing, ledgerPosition: size)
        let signed = try SignedKeyEvent(delegation: event, issuerSigner: issuerSigner, clearingSigner: clearingSigner)
        var log = keyLog
        try log.append(signed)
        let saved = (keyLog, size)
        keyLog = log
        do {
            _ = try append { position, previous, time in
                precondition(position == event.ledgerPosition, "a delegation is recorded at the position it names")
                return try LedgerEntry(
                    position: position, id: .random(), kind: .keyEvent, amount: nil,
                    note: "clearing delegation \(event.sequence)", time: time, payload: signed.encoded,
                    previousLink: previous)
            }
        } catch {
            // `append` throws after its commit only when the anchor could not move; then the delegation stands.
            if size == saved.1 { keyLog = saved.0 }
            throw error
        }
        return signed
    }
}

extension Wallet {
    /// Appends a clearing delegation whose clearing key is `clearingKey` on `clearingToken`: a P-256 signing key
    /// made on a token, sensitive and never extractable like every wallet key, but **not** always-authenticate,
    /// because the clearing signs unattended with a PIN its service holds (docs/CLEARING.md §1.2, the documented
    /// exception). An always-authenticate key is refused: the service could not use it. Its origin is checked
    /// and recorded as a key event's is. `tlsKeyDigest` is the service's TLS key pin; `url` its https URL.
    public func delegateClearing(
        clearingToken: TokenSession, clearingKey uri: PKCS11URI, tlsKeyDigest: Digest32, url: String
    ) throws -> SignedKeyEvent {
        let key: TokenKey
        do {
            key = try clearingToken.key(uri)
        } catch let error as TokenError where error.code == .keyRefused {
            // The token has the key but its public point is not a P-256 one (another curve).
            throw WalletError(.refused, "the clearing key \(uri.withoutPIN) is not a P-256 key: \(error.message)")
        }
        let attributes = try clearingToken.attributes(of: uri)
        guard attributes.alwaysAuthenticate != true else {
            throw WalletError(
                .refused,
                "the clearing key \(uri.withoutPIN) is always-authenticate (CKA_ALWAYS_AUTHENTICATE true): the "
                    + "clearing signs unattended, so its key must not ask for the PIN at each signature")
        }
        guard attributes.sign == true, attributes.extractable == false, attributes.sensitive == true else {
            throw WalletError(
                .refused,
                "the clearing key \(uri.withoutPIN) must be a sensitive, never extractable signing key on its token")
        }
        let origin = try Wallet.checkedOrigin(of: key, on: clearingToken, what: "the clearing key", paths: paths)
        let clearing: ClearingDelegation
        do {
            clearing = try ClearingDelegation(
                clearingKey: key.publicKey, clearingKeyOrigin: origin.recorded, tlsKeyDigest: tlsKeyDigest, url: url)
        } catch let error as FormatError {
            throw WalletError(.invalidInput, error.message)
        }
        return try delegateClearing(clearing, clearingSigner: TokenSigner(token: clearingToken, key: key))
    }
}
