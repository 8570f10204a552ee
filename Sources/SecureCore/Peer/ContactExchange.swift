import SecureCrypto

/// The proximity gate of a contact exchange: it opens when this side's median is at most 250 mm, the peer's
/// claimed median is at most 250 mm, and the two differ by at most 100 mm; simulated ranging on either side
/// keeps it closed unless both this side's policy and the peer's gate allow simulated ranging.
public enum ContactGateRule {
    /// 25 cm: two phones held together, as seed 004 has it.
    public static let distanceMillimetresMax: UInt32 = 250
    /// 10 cm: the two sides measure the same link, so a larger difference means someone lies or relays.
    public static let disagreementMillimetresMax: UInt32 = 100

    /// Whether the gate opens, and if not, why (a sentence for the person).
    public static func evaluate(own: ContactGate, peer: ContactGate, policy: RangingPolicy) -> String? {
        if !(policy.allowsSimulated && peer.allowsSimulated), own.source == .simulated || peer.source == .simulated {
            return "simulated ranging is not allowed (both sides need --allow-simulated-ranging)"
        }
        if own.medianMillimetres > distanceMillimetresMax {
            return "this device measured \(own.medianMillimetres) mm; hold the devices within "
                + "\(distanceMillimetresMax) mm"
        }
        if peer.medianMillimetres > distanceMillimetresMax {
            return "the other device claims \(peer.medianMillimetres) mm; hold the devices within "
                + "\(distanceMillimetresMax) mm"
        }
        let difference =
            own.medianMillimetres > peer.medianMillimetres
            ? own.medianMillimetres - peer.medianMillimetres : peer.medianMillimetres - own.medianMillimetres
        if difference > disagreementMillimetresMax {
            return "the two devices disagree by \(difference) mm (at most \(disagreementMillimetresMax)): a relay, "
                + "or a bad reading"
        }
        return nil
    }
}

/// The secrets of a contact, derived from the two ML-KEM-1024 shared secrets (docs/PROTOCOL.md, "Contacts →
/// Contact secret"): one pairwise secret, from which the discovery key K and the file key come.
public enum ContactSecret {
    static let transcriptLabel = DomainLabel.bytes("secure-contact-transcript-v1")
    static let secretInfo = Array("secure-contact-secret-v1".utf8)
    static let confirmLabel = DomainLabel.bytes("secure-contact-key-confirm-v1")
    static let discoveryInfo = Array("secure-contact-discovery-key-v1".utf8)
    static let fileInfo = Array("secure-contact-file-key-v1".utf8)
    static let probeLabel = DomainLabel.bytes("secure-contact-probe-v1")
    static let answerLabel = DomainLabel.bytes("secure-contact-answer-v1")
    /// A contact secret, and each key derived from it, is 32 bytes.
    public static let byteCount = 32

    /// SHA-256 of label ‖ channel binding (u8 length) ‖ nonce ‖ both wallet ids ‖ both contact keys' SHA-256 ‖
    /// both ciphertexts, the initiator's first each time.
    public static func transcriptDigest(
        channelBinding: [UInt8], nonce: Digest32, initiator: ContactCard, responder: ContactCard,
        initiatorCiphertext: [UInt8], responderCiphertext: [UInt8]
    ) -> Digest32 {
        transcriptDigest(
            channelBinding: channelBinding, nonce: nonce, initiatorWalletID: initiator.walletID,
            responderWalletID: responder.walletID, initiatorKey: initiator.contactKey,
            responderKey: responder.contactKey, initiatorCiphertext: initiatorCiphertext,
            responderCiphertext: responderCiphertext)
    }

    /// The same from the values a card contributes, so a known-answer test can fix the wallet ids.
    static func transcriptDigest(
        channelBinding: [UInt8], nonce: Digest32, initiatorWalletID: WalletID, responderWalletID: WalletID,
        initiatorKey: MLKEM1024.PublicKey, responderKey: MLKEM1024.PublicKey, initiatorCiphertext: [UInt8],
        responderCiphertext: [UInt8]
    ) -> Digest32 {
        var writer = ByteWriter(capacity: 128 + channelBinding.count + 2 * ContactEncapsulation.byteCount)
        writer.write(raw: transcriptLabel)
        writer.write(prefixed8: channelBinding, max: TransferOrder.channelBindingByteCountMax)
        writer.write(nonce)
        writer.write(initiatorWalletID)
        writer.write(responderWalletID)
        writer.write(Digest32(of: initiatorKey.rawRepresentation))
        writer.write(Digest32(of: responderKey.rawRepresentation))
        writer.write(raw: initiatorCiphertext)
        writer.write(raw: responderCiphertext)
        return Digest32(of: writer.bytes)
    }

    /// HKDF-SHA256(ikm = ss_i ‖ ss_r, salt = transcript, info = "secure-contact-secret-v1"), 32 bytes; ss_i is
    /// the secret of the ciphertext the initiator made.
    public static func derive(
        initiatorShared: SecretBytes, responderShared: SecretBytes, transcript: Digest32
    ) throws -> SecretBytes {
        let input = SecretBytes.concatenation([initiatorShared, responderShared])
        return try derive(input, salt: transcript.bytes, info: secretInfo)
    }

    /// HMAC-SHA256(secret, label ‖ role): what a confirm carries to show its signer holds the same secret.
    public static func keyConfirmation(secret: SecretBytes, role: ContactRole) -> Digest32 {
        Digest32(exactly: HMACSHA256.authenticationCode(key: secret, message: confirmLabel + [role.rawValue]))
    }

    /// The discovery key K: tags in announcements, and the probe and answer of `pay --to NAME`.
    public static func discoveryKey(secret: SecretBytes) throws -> SecretBytes {
        try derive(secret, salt: [], info: discoveryInfo)
    }

    /// The key that seals files addressed to this contact.
    public static func fileKey(secret: SecretBytes) throws -> SecretBytes {
        try derive(secret, salt: [], info: fileInfo)
    }

    /// The payer's probe on a new channel: HMAC(K, "secure-contact-probe-v1" ‖ channel binding). Bound to the
    /// channel, so a probe or answer seen on one channel proves nothing on another (a relay runs two).
    public static func probe(discoveryKey: SecretBytes, channelBinding: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(key: discoveryKey, message: probeLabel + channelBinding)
    }

    /// The receiver's answer to a probe that checked under K.
    public static func answer(discoveryKey: SecretBytes, channelBinding: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(key: discoveryKey, message: answerLabel + channelBinding)
    }

    private static func derive(_ key: SecretBytes, salt: [UInt8], info: [UInt8]) throws -> SecretBytes {
        var output = try HKDFSHA256.deriveKey(inputKeyMaterial: key, salt: salt, info: info, outputByteCount: byteCount)
        defer { output.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        return SecretBytes(output)
    }
}

/// What one side knows of its own part before the exchange starts.
public struct ContactExchangeContext: Sendable {
    /// This side's end of the channel.
    public let role: ContactRole
    /// The channel's transcript hash, for the session nonce.
    public let transcriptHash: Digest32
    /// The channel's binding, which the signed measurements and confirms cover.
    public let channelBinding: [UInt8]
    /// The channel's SAS inputs, from which the words come.
    public let wordsInput: ContactWordsInput
    /// This wallet's card, sent once the gate opens.
    public let card: ContactCard
    /// 16 fresh random bytes toward the session nonce.
    public let nonceContribution: NonceContribution
    /// Whether simulated ranging is allowed on this side.
    public let policy: RangingPolicy

    public init(
        role: ContactRole, transcriptHash: Digest32, channelBinding: [UInt8], wordsInput: ContactWordsInput,
        card: ContactCard, nonceContribution: NonceContribution, policy: RangingPolicy
    ) {
        self.role = role
        self.transcriptHash = transcriptHash
        self.channelBinding = channelBinding
        self.wordsInput = wordsInput
        self.card = card
        self.nonceContribution = nonceContribution
        self.policy = policy
    }
}

/// What the person is asked to check before confirming.
public struct ContactReview: Sendable {
    /// The five words both people read aloud.
    public let words: ContactWords
    /// The other wallet's card (its id and log), verified against the signed measurement.
    public let peer: ContactCard
    /// This side's median and the other side's signed median, in millimetres.
    public let ownMillimetres: UInt32
    public let peerMillimetres: UInt32
}

/// A finished exchange: who the contact is, the pairwise secret, and whether both confirms arrived.
public struct ContactExchangeResult: Sendable {
    /// The contact's card: wallet id, key-event log, ML-KEM-1024 key, trusted issuers.
    public let peer: ContactCard
    /// The pairwise contact secret (32 bytes).
    public let secret: SecretBytes
    /// The words both people read.
    public let words: ContactWords
    /// True when both signed confirms arrived; false when only this side's was sent ("unconfirmed").
    public let verified: Bool
    /// The larger of the two signed medians.
    public let medianMillimetres: UInt32
    /// Simulated when either side's ranging was simulated.
    public let source: RangingSource
}

/// How a contact exchange ended.
public enum ContactOutcome: Sendable {
    /// The contact is to be stored, verified or unconfirmed.
    case added(ContactExchangeResult)
    /// Nothing is stored; `byPeer` when the other side ended it, with a sentence for the person.
    case failed(ContactFailure.Reason, byPeer: Bool, String)
}

/// What the machine waits for from the peer, with its timeout.
public enum ContactWait: String, Sendable {
    case gate, card, measurement, encapsulation, confirm

    /// Seconds: the gate and the confirm wait on the other person (ranging, reading the words aloud);
    /// the measurement waits on the other token's PIN.
    public var seconds: Int {
        switch self {
        case .gate: 60
        case .card, .encapsulation: 30
        case .measurement: 90
        case .confirm: 120
        }
    }
}

/// What the contact machine asks its driver to do.
public enum ContactAction: Sendable {
    /// Range with the peer; answer `ranged` or `localFailure`.
    case range
    case send(ContactMessage)
    /// Sign with the wallet key (the token); answer `measurementSigned` or `localFailure`.
    case signMeasurement(ContactMeasurement)
    /// Encapsulate to the peer's contact key; answer `encapsulated`.
    case encapsulate(MLKEM1024.PublicKey)
    /// Decapsulate with this wallet's contact key, in locked memory; answer `decapsulated` or `localFailure`.
    case decapsulate([UInt8])
    /// Show the words and the peer, and ask the person; answer `reviewed`.
    case review(ContactReview)
    /// Sign the confirm; answer `confirmSigned` or `localFailure`.
    case signConfirm(ContactConfirm)
    case finish(ContactOutcome)
}

/// A contact exchange as a pure state machine (docs/PROTOCOL.md, "Contacts → The exchange"). Both sides run
/// the same machine; only the role differs. Nothing that names a wallet is sent before the proximity gate
/// opens; the identities are bound to this channel by signed measurements before any key is encapsulated;
/// the words come from the channel's commit-first SAS inputs only; the contact is stored only when this
/// side's person confirmed, and as verified only when the peer's signed confirm arrived too.
///
/// Messages are handed to `receive` only while the machine waits for the peer (`wait` is not nil): the
/// driver carries out each action before it reads the channel again. A message that is not the one awaited
/// ends the exchange as a violation; a driver answer in the wrong state is our bug and traps.
public struct ContactExchangeMachine {
    private struct Gated {
        let own: ContactGate
        let ownSummary: RangingSummary
        let peer: ContactGate
        let nonce: Digest32
    }

    private struct Keyed {
        let transcript: Digest32
        let secret: SecretBytes
    }

    private enum State {
        case idle
        case ranging
        case awaitingGate(ContactGate, RangingSummary)
        case awaitingCard(Gated)
        case signingMeasurement(Gated, ContactCard)
        case awaitingMeasurement(Gated, ContactCard)
        case encapsulating(Gated, ContactCard)
        case awaitingEncapsulation(Gated, ContactCard, ciphertext: [UInt8], shared: SecretBytes)
        case decapsulating(Gated, ContactCard, ownCiphertext: [UInt8], ownShared: SecretBytes, peerCiphertext: [UInt8])
        case reviewing(Gated, ContactCard, Keyed)
        case signingConfirm(Gated, ContactCard, Keyed)
        case awaitingConfirm(Gated, ContactCard, Keyed)
        case finished(ContactOutcome)
    }

    private var state = State.idle
    private let context: ContactExchangeContext

    public init(context: ContactExchangeContext) { self.context = context }

    /// The words of this exchange: known as soon as the channel is up, shown only at the review.
    public var words: ContactWords { ContactWords(context.wordsInput) }

    /// How the exchange ended, once it has.
    public var outcome: ContactOutcome? {
        if case .finished(let outcome) = state { return outcome }
        return nil
    }

    /// What the machine waits for from the peer; nil while an action is pending, before start and at the end.
    public var wait: ContactWait? {
        switch state {
        case .awaitingGate: .gate
        case .awaitingCard: .card
        case .awaitingMeasurement: .measurement
        case .awaitingEncapsulation: .encapsulation
        case .awaitingConfirm: .confirm
        case .idle, .ranging, .signingMeasurement, .encapsulating, .decapsulating, .reviewing, .signingConfirm,
            .finished:
            nil
        }
    }

    /// Starts: ranging first; nothing is sent until it is done.
    public mutating func start() -> [ContactAction] {
        guard case .idle = state else { preconditionFailure("the contact machine was started twice") }
        state = .ranging
        return [.range]
    }

    // MARK: Driver answers

    /// This side's ranging is done: the gate message goes out with its median.
    public mutating func ranged(_ summary: RangingSummary, source: RangingSource) -> [ContactAction] {
        guard case .ranging = state else { preconditionFailure("ranging answered in another state") }
        let gate = ContactGate(
            nonceContribution: context.nonceContribution, source: source, medianMillimetres: summary.medianMillimetres,
            allowsSimulated: context.policy.allowsSimulated)
        state = .awaitingGate(gate, summary)
        return [.send(.gate(gate))]
    }

    /// The measurement is signed: it goes out, and the peer's is awaited.
    public mutating func measurementSigned(_ signed: SignedContactMeasurement) -> [ContactAction] {
        guard case .signingMeasurement(let gated, let peer) = state else {
            preconditionFailure("a measurement signed in another state")
        }
        state = .awaitingMeasurement(gated, peer)
        return [.send(.measurement(signed))]
    }

    /// This side's ciphertext to the peer's key is made.
    public mutating func encapsulated(ciphertext: [UInt8], shared: SecretBytes) -> [ContactAction] {
        guard case .encapsulating(let gated, let peer) = state else {
            preconditionFailure("an encapsulation answered in another state")
        }
        precondition(ciphertext.count == ContactEncapsulation.byteCount, "an ML-KEM-1024 ciphertext")
        state = .awaitingEncapsulation(gated, peer, ciphertext: ciphertext, shared: shared)
        return [.send(.encapsulation(ContactEncapsulation(ciphertext: ciphertext)))]
    }

    /// The peer's ciphertext is decapsulated: the contact secret is derived and the person reviews the words.
    public mutating func decapsulated(_ peerShared: SecretBytes) -> [ContactAction] {
        guard case .decapsulating(let gated, let peer, let ownCiphertext, let ownShared, let peerCiphertext) = state
        else { preconditionFailure("a decapsulation answered in another state") }
        let initiatorIsSelf = context.role == .initiator
        let transcript = ContactSecret.transcriptDigest(
            channelBinding: context.channelBinding, nonce: gated.nonce,
            initiator: initiatorIsSelf ? context.card : peer, responder: initiatorIsSelf ? peer : context.card,
            initiatorCiphertext: initiatorIsSelf ? ownCiphertext : peerCiphertext,
            responderCiphertext: initiatorIsSelf ? peerCiphertext : ownCiphertext)
        // ss_i is the secret of the initiator's ciphertext: the initiator made it (own), the responder opened it.
        let secret: SecretBytes
        do {
            secret = try ContactSecret.derive(
                initiatorShared: initiatorIsSelf ? ownShared : peerShared,
                responderShared: initiatorIsSelf ? peerShared : ownShared, transcript: transcript)
        } catch {
            return fail(.localFailure, "the contact secret could not be derived: \(error)")
        }
        let keyed = Keyed(transcript: transcript, secret: secret)
        state = .reviewing(gated, peer, keyed)
        return [
            .review(
                ContactReview(
                    words: words, peer: peer, ownMillimetres: gated.own.medianMillimetres,
                    peerMillimetres: gated.peer.medianMillimetres))
        ]
    }

    /// The person's answer: yes signs the confirm; no tells the peer and stores nothing.
    public mutating func reviewed(accepted: Bool) -> [ContactAction] {
        guard case .reviewing(let gated, let peer, let keyed) = state else {
            preconditionFailure("a review answered in another state")
        }
        guard accepted else {
            return fail(.declined, "declined: the words were not confirmed; nothing was stored")
        }
        state = .signingConfirm(gated, peer, keyed)
        return [
            .signConfirm(
                ContactConfirm(
                    binding: binding(gated, peer: peer), transcript: keyed.transcript,
                    keyConfirmation: ContactSecret.keyConfirmation(secret: keyed.secret, role: context.role)))
        ]
    }

    /// The confirm is signed: it goes out, and the peer's is awaited.
    public mutating func confirmSigned(_ signed: SignedContactConfirm) -> [ContactAction] {
        guard case .signingConfirm(let gated, let peer, let keyed) = state else {
            preconditionFailure("a confirm signed in another state")
        }
        state = .awaitingConfirm(gated, peer, keyed)
        return [.send(.confirm(signed))]
    }

    /// A step on this side failed (ranging, the token, decapsulation): the peer is told, nothing is stored.
    public mutating func localFailure(_ why: String) -> [ContactAction] {
        if case .finished = state { return [] }
        return fail(.localFailure, why)
    }

    /// The peer's bytes did not decode, or were not a contact message at all: a violation.
    public mutating func malformed(_ detail: String) -> [ContactAction] {
        if case .finished = state { return [] }
        return fail(.violation, "protocol violation: \(detail); nothing was stored")
    }

    /// The peer said nothing in time. Waiting for its confirm, the contact is kept as unconfirmed: this side's
    /// person confirmed, and the peer may have too with its confirm lost.
    public mutating func timeoutExpired() -> [ContactAction] { peerGone("no answer in time") }

    /// The link dropped; as a timeout.
    public mutating func linkDropped() -> [ContactAction] { peerGone("the link dropped") }

    private mutating func peerGone(_ why: String) -> [ContactAction] {
        switch state {
        case .finished: return []
        case .awaitingConfirm(let gated, let peer, let keyed):
            return finish(.added(result(gated, peer, keyed, verified: false)))
        default:
            // The peer is told (if it still listens), so it does not wait out its own timer.
            state = .finished(.failed(.localFailure, byPeer: true, "\(why); nothing was stored"))
            return [.send(.failure(ContactFailure(reason: .localFailure))), .finish(outcome!)]
        }
    }

    // MARK: Messages

    /// A message from the peer. A failure message ends the exchange in any state.
    public mutating func receive(_ message: ContactMessage) throws -> [ContactAction] {
        // An ended exchange stays ended: a late message must not turn a stored contact into a violation.
        if case .finished = state { return [] }
        if case .failure(let failure) = message { return peerFailed(failure.reason) }
        switch (state, message) {
        case (.awaitingGate(let own, let summary), .gate(let peerGate)):
            return gateArrived(own: own, summary: summary, peer: peerGate)
        case (.awaitingCard(let gated), .card(let card)):
            return try cardArrived(gated, card)
        case (.awaitingMeasurement(let gated, let peer), .measurement(let signed)):
            try check(signed, gated: gated, peer: peer)
            state = .encapsulating(gated, peer)
            return [.encapsulate(peer.contactKey)]
        case (.awaitingEncapsulation(let gated, let peer, let ciphertext, let shared), .encapsulation(let theirs)):
            state = .decapsulating(
                gated, peer, ownCiphertext: ciphertext, ownShared: shared, peerCiphertext: theirs.ciphertext)
            return [.decapsulate(theirs.ciphertext)]
        case (.awaitingConfirm(let gated, let peer, let keyed), .confirm(let signed)):
            try check(signed, gated: gated, peer: peer, keyed: keyed)
            return finish(.added(result(gated, peer, keyed, verified: true)))
        default:
            throw violation("a \(message.name) is not expected \(stateName)")
        }
    }

    private mutating func gateArrived(own: ContactGate, summary: RangingSummary, peer: ContactGate) -> [ContactAction] {
        if let why = ContactGateRule.evaluate(own: own, peer: peer, policy: context.policy) {
            return fail(.gateClosed, "the proximity gate stayed closed: \(why); nothing was exchanged")
        }
        let initiator = context.role == .initiator ? own : peer
        let responder = context.role == .initiator ? peer : own
        let nonce = SessionNonce.derive(
            transcriptHash: context.transcriptHash, payerContribution: initiator.nonceContribution,
            payeeContribution: responder.nonceContribution)
        state = .awaitingCard(Gated(own: own, ownSummary: summary, peer: peer, nonce: nonce))
        return [.send(.card(context.card))]
    }

    private mutating func cardArrived(_ gated: Gated, _ card: ContactCard) throws -> [ContactAction] {
        guard card.walletID != context.card.walletID else { throw violation("the peer sent this wallet's own card") }
        guard card.log.current.contactKeyDigest == KeyEvent.contactKeyDigest(of: card.contactKey) else {
            throw violation("the card's contact key is not the one its key-event log commits to")
        }
        state = .signingMeasurement(gated, card)
        return [
            .signMeasurement(
                ContactMeasurement(
                    binding: binding(gated, peer: card), summary: gated.ownSummary, source: gated.own.source))
        ]
    }

    private mutating func check(_ signed: SignedContactMeasurement, gated: Gated, peer: ContactCard) throws {
        let measurement = signed.payload
        guard measurement.binding == expectedPeerBinding(gated, peer: peer) else {
            throw violation(
                "the peer's measurement is not bound to this session, this channel and these two wallets (a relay?)")
        }
        guard signed.isSignatureValid else {
            throw violation("the peer's measurement is not signed by the key its key-event log has in force")
        }
        guard measurement.summary.medianMillimetres == gated.peer.medianMillimetres,
            measurement.source == gated.peer.source
        else {
            throw violation("the peer's signed median is not the one it claimed at the gate")
        }
    }

    private mutating func check(
        _ signed: SignedContactConfirm, gated: Gated, peer: ContactCard, keyed: Keyed
    ) throws {
        let confirm = signed.payload
        guard confirm.binding == expectedPeerBinding(gated, peer: peer), signed.isSignatureValid,
            confirm.transcript == keyed.transcript,
            ConstantTime.equal(
                confirm.keyConfirmation.bytes,
                ContactSecret.keyConfirmation(secret: keyed.secret, role: context.role.peer).bytes)
        else {
            throw violation("the peer's confirm does not match this exchange (its binding, signature or secret)")
        }
    }

    private func binding(_ gated: Gated, peer: ContactCard) -> ContactBinding {
        let own = context.card.log.current
        return ContactBinding(
            nonce: gated.nonce, channelBinding: context.channelBinding, signerRole: context.role,
            signerWalletID: context.card.walletID, peerWalletID: peer.walletID, signerKey: own.signingKey,
            keySequence: own.sequence)
    }

    private func expectedPeerBinding(_ gated: Gated, peer: ContactCard) -> ContactBinding {
        let current = peer.log.current
        return ContactBinding(
            nonce: gated.nonce, channelBinding: context.channelBinding, signerRole: context.role.peer,
            signerWalletID: peer.walletID, peerWalletID: context.card.walletID, signerKey: current.signingKey,
            keySequence: current.sequence)
    }

    private func result(_ gated: Gated, _ peer: ContactCard, _ keyed: Keyed, verified: Bool) -> ContactExchangeResult {
        ContactExchangeResult(
            peer: peer, secret: keyed.secret, words: words, verified: verified,
            medianMillimetres: max(gated.own.medianMillimetres, gated.peer.medianMillimetres),
            source: gated.own.source == .simulated || gated.peer.source == .simulated ? .simulated : .external)
    }

    private mutating func peerFailed(_ reason: ContactFailure.Reason) -> [ContactAction] {
        if case .finished = state { return [] }
        let why =
            switch reason {
            case .gateClosed: "the other side's proximity gate stayed closed"
            case .declined: "the other person did not confirm the words"
            case .violation: "the other side found a protocol violation"
            case .localFailure: "the other side failed"
            }
        state = .finished(.failed(reason, byPeer: true, "\(why); nothing was stored"))
        return [.finish(outcome!)]
    }

    private mutating func fail(_ reason: ContactFailure.Reason, _ why: String) -> [ContactAction] {
        state = .finished(.failed(reason, byPeer: false, why))
        return [.send(.failure(ContactFailure(reason: reason))), .finish(outcome!)]
    }

    private mutating func finish(_ outcome: ContactOutcome) -> [ContactAction] {
        state = .finished(outcome)
        return [.finish(outcome)]
    }

    /// Ends the exchange (the peer is told) and returns the error the driver reports.
    private mutating func violation(_ detail: String) -> ContactProtocolError {
        let actions = fail(.violation, "protocol violation: \(detail); nothing was stored")
        return ContactProtocolError(message: "protocol violation: \(detail)", actions: actions)
    }

    private var stateName: String {
        switch state {
        case .idle: "before the start"
        case .ranging: "while ranging"
        case .awaitingGate: "while waiting for the gate"
        case .awaitingCard: "while waiting for the card"
        case .signingMeasurement: "while signing"
        case .awaitingMeasurement: "while waiting for the measurement"
        case .encapsulating: "while encapsulating"
        case .awaitingEncapsulation: "while waiting for the encapsulation"
        case .decapsulating: "while decapsulating"
        case .reviewing: "while the person reviews the words"
        case .signingConfirm: "while signing the confirm"
        case .awaitingConfirm: "while waiting for the confirm"
        case .finished: "after the end"
        }
    }
}

/// A contact message the exchange does not allow, or one that fails its checks; the actions tell the peer
/// and finish.
public struct ContactProtocolError: Error, CustomStringConvertible {
    public let message: String
    public let actions: [ContactAction]
    public var description: String { message }
}
