import SecureCrypto

/// What a handshake state machine asks its driver to do. The machines do no I/O.
public enum HandshakeAction {
    /// Send this frame body to the peer.
    case send([UInt8])
    /// The handshake is complete: records may flow with these keys.
    case complete(HandshakeOutcome)
}

/// Everything the handshake established: the public summary and the record keys.
public struct HandshakeOutcome: Sendable {
    /// Values the peer protocol reads: session id, channel binding, contributions, transcript hash, SAS.
    public let summary: ChannelSummary
    let sendKey: SecretBytes
    let receiveKey: SecretBytes

    /// The sealer for our direction. Internal on purpose: two sealers from one outcome would reuse nonces,
    /// so only the channel driver (and tests) make one, once.
    func makeSealer() -> RecordSealer {
        RecordSealer(key: sendKey, sessionId: summary.sessionId, direction: RecordDirection(sender: summary.role))
    }

    /// The opener for the peer's direction.
    func makeOpener() -> RecordOpener {
        RecordOpener(
            key: receiveKey, sessionId: summary.sessionId,
            direction: RecordDirection(sender: summary.role == .initiator ? .responder : .initiator))
    }
}

/// The public result of a handshake, the same on both sides except `role`.
public struct ChannelSummary: Sendable, Equatable {
    /// Our role.
    public let role: ChannelRole
    /// The suite both contributions named.
    public let suite: ChannelSuite
    /// 16 bytes that name the session; bound into every record.
    public let sessionId: [UInt8]
    /// 32 bytes the token signatures of the peer protocol cover.
    public let channelBinding: [UInt8]
    /// SHA-256 over the handshake messages, as defined in docs/PROTOCOL.md.
    public let transcriptHash: [UInt8]
    /// The initiator's commitment.
    public let commitment: [UInt8]
    /// contribution_I as encoded on the wire.
    public let initiatorContribution: [UInt8]
    /// contribution_R as encoded on the wire.
    public let responderContribution: [UInt8]
    /// What the two people compare.
    public let sas: ShortAuthenticationString
}

/// The pieces both machines combine once they hold both secrets.
private func finish(
    role: ChannelRole, suite: ChannelSuite, initiatorSecret: SecretBytes, responderSecret: SecretBytes,
    transcript: [[UInt8]], commitment: [UInt8], initiator: [UInt8], responder: [UInt8]
)
    -> (HandshakeOutcome, KeySchedule.Derived)
{
    let transcriptHash = KeySchedule.transcriptHash(transcript)
    let derived = KeySchedule.derive(
        initiatorSecret: initiatorSecret, responderSecret: responderSecret,
        transcriptHash: transcriptHash, initiatorContribution: initiator,
        responderContribution: responder)
    let summary = ChannelSummary(
        role: role, suite: suite, sessionId: derived.sessionId, channelBinding: derived.channelBinding,
        transcriptHash: transcriptHash, commitment: commitment, initiatorContribution: initiator,
        responderContribution: responder,
        sas: KeySchedule.shortAuthenticationString(commitment: commitment, initiator: initiator, responder: responder))
    let outcome = HandshakeOutcome(
        summary: summary,
        sendKey: role == .initiator ? derived.initiatorRecordKey : derived.responderRecordKey,
        receiveKey: role == .initiator ? derived.responderRecordKey : derived.initiatorRecordKey)
    return (outcome, derived)
}

/// Decodes a frame that must be a handshake message: a short frame is complete as far as the transport
/// is concerned, so here it is an error.
private func decodeHandshake(_ frame: [UInt8]) throws -> HandshakeMessage {
    guard let message = try HandshakeMessage.decode(frame) else {
        throw ChannelError(.truncated, "a handshake message of \(frame.count) bytes is cut short")
    }
    return message
}

private func unexpected(_ message: HandshakeMessage, _ expected: String) -> ChannelError {
    ChannelError(.unexpectedMessage, "received a \(message.name) message while waiting for \(expected)")
}

private func parsePeerKey<K: ChannelKEM>(_ contribution: Contribution, as kem: K.Type) throws -> K.PublicKey {
    do {
        return try K.PublicKey(rawRepresentation: contribution.publicKey)
    } catch {
        throw ChannelError(.invalidPeerKey, "the peer's \(K.name) public key is invalid: \(error)")
    }
}

private func decapsulate<K: ChannelKEM>(_ ciphertext: [UInt8], with key: K.PrivateKey, as kem: K.Type) throws
    -> SecretBytes
{
    do {
        return try key.decapsulate(ciphertext)
    } catch {
        throw ChannelError(.invalidPeerKey, "the peer's \(K.name) ciphertext is invalid: \(error)")
    }
}

/// Both contributions must name the same first suite, the one their keys belong to. The full lists are in
/// the transcript, so a negotiation altered in transit fails at key confirmation.
private func checkSuites(ours: Contribution, theirs: Contribution) throws {
    guard theirs.suites.first == ours.suites.first else {
        throw ChannelError(
            .noCommonSuite, "the peer's key is for \(theirs.suites[0]); this wallet's is for \(ours.suites[0])")
    }
}

/// Encapsulation is a closure so that tests can play a man in the middle who chooses his randomness.
typealias Encapsulator<K: ChannelKEM> = @Sendable (K.PublicKey) -> (sharedSecret: SecretBytes, ciphertext: [UInt8])

/// The initiator's side: commit → (hello) → reveal → (response, responder confirm) → initiator confirm.
public struct InitiatorHandshake<K: ChannelKEM> {
    private struct Committed {
        let opening: Opening<K>
        let commitment: [UInt8]
        let commitMessage: [UInt8]
    }

    private struct Revealed {
        let committed: Committed
        let responderContribution: [UInt8]
        let initiatorSecret: SecretBytes
        let transcript: [[UInt8]]
    }

    private enum State {
        case ready(Committed)
        case awaitingHello(Committed)
        case awaitingResponse(Revealed)
        case awaitingConfirm(Confirming)
        case complete
        case failed
    }

    private var state: State
    var encapsulate: Encapsulator<K> = { $0.encapsulate() }

    /// A fresh initiator. The key and randomness default to fresh ones from the system CSPRNG; tests pass
    /// their own. `suites` lists this side's suites, `K.suite` first.
    public init(
        privateKey: K.PrivateKey = .generate(), random: [UInt8] = SystemRandom.bytes(Contribution.randomByteCount),
        suites: [ChannelSuite] = [K.suite]
    ) {
        let opening = Opening<K>(privateKey: privateKey, random: random, suites: suites)
        let commitment = KeySchedule.commitment(to: opening.encoded)
        let commitMessage = HandshakeMessage.commit(version: ChannelVersion.current, commitment: commitment).encoded
        state = .ready(Committed(opening: opening, commitment: commitment, commitMessage: commitMessage))
    }

    /// Sends the commitment. Calling it twice is our bug.
    public mutating func start() -> [HandshakeAction] {
        guard case .ready(let committed) = state else { preconditionFailure("the initiator has already started") }
        state = .awaitingHello(committed)
        return [.send(committed.commitMessage)]
    }

    /// Handles one frame from the responder. Any error leaves the machine failed for good.
    public mutating func receive(_ frame: [UInt8]) throws -> [HandshakeAction] {
        do {
            return try step(frame)
        } catch {
            state = .failed
            throw error
        }
    }

    private mutating func step(_ frame: [UInt8]) throws -> [HandshakeAction] {
        let message = try decodeHandshake(frame)
        switch state {
        case .ready:
            throw ChannelError(.unexpectedMessage, "received a \(message.name) message before sending the commitment")
        case .awaitingHello(let committed):
            guard case .hello(let contribution) = message else { throw unexpected(message, "the hello") }
            return try reveal(committed, responder: contribution, helloMessage: frame)
        case .awaitingResponse(let revealed):
            guard case .response(let ciphertext) = message else { throw unexpected(message, "the response") }
            try derive(revealed, ciphertext: ciphertext, responseMessage: frame)
            return []
        case .awaitingConfirm(let confirming):
            guard case .responderConfirm(let mac) = message else {
                throw unexpected(message, "the responder's confirmation")
            }
            try confirming.check(mac, from: .responder)
            state = .complete
            let ours = confirming.confirmation(of: .initiator)
            return [.send(HandshakeMessage.initiatorConfirm(mac: ours).encoded), .complete(confirming.outcome)]
        case .complete, .failed:
            throw ChannelError(.unexpectedMessage, "received a \(message.name) message after the handshake ended")
        }
    }

    private mutating func reveal(_ committed: Committed, responder: Contribution, helloMessage: [UInt8]) throws
        -> [HandshakeAction]
    {
        try checkSuites(ours: committed.opening.contribution, theirs: responder)
        let peerKey = try parsePeerKey(responder, as: K.self)
        let (secret, ciphertext) = encapsulate(peerKey)
        let revealMessage = HandshakeMessage.reveal(committed.opening.contribution, ciphertext: ciphertext).encoded
        state = .awaitingResponse(
            Revealed(
                committed: committed, responderContribution: responder.encoded, initiatorSecret: secret,
                transcript: [committed.commitMessage, helloMessage, revealMessage]))
        return [.send(revealMessage)]
    }

    private mutating func derive(_ revealed: Revealed, ciphertext: [UInt8], responseMessage: [UInt8]) throws {
        let responderSecret = try decapsulate(ciphertext, with: revealed.committed.opening.privateKey, as: K.self)
        let (outcome, derived) = finish(
            role: .initiator, suite: K.suite, initiatorSecret: revealed.initiatorSecret,
            responderSecret: responderSecret,
            transcript: revealed.transcript + [responseMessage], commitment: revealed.committed.commitment,
            initiator: revealed.committed.opening.encoded, responder: revealed.responderContribution)
        state = .awaitingConfirm(Confirming(outcome: outcome, derived: derived))
    }
}

/// The responder's side: (commit) → hello → (reveal) → response, responder confirm → (initiator confirm).
public struct ResponderHandshake<K: ChannelKEM> {
    private struct Committed {
        let opening: Opening<K>
        let commitment: [UInt8]
        let commitMessage: [UInt8]
        let helloMessage: [UInt8]
    }

    private enum State {
        case awaitingCommit(Opening<K>)
        case awaitingReveal(Committed)
        case awaitingConfirm(Confirming)
        case complete
        case failed
    }

    private var state: State
    var encapsulate: Encapsulator<K> = { $0.encapsulate() }

    /// A fresh responder; see `InitiatorHandshake.init`.
    public init(
        privateKey: K.PrivateKey = .generate(), random: [UInt8] = SystemRandom.bytes(Contribution.randomByteCount),
        suites: [ChannelSuite] = [K.suite]
    ) {
        state = .awaitingCommit(Opening(privateKey: privateKey, random: random, suites: suites))
    }

    /// The responder speaks only when spoken to.
    public mutating func start() -> [HandshakeAction] { [] }

    /// Handles one frame from the initiator. Any error leaves the machine failed for good.
    public mutating func receive(_ frame: [UInt8]) throws -> [HandshakeAction] {
        do {
            return try step(frame)
        } catch {
            state = .failed
            throw error
        }
    }

    private mutating func step(_ frame: [UInt8]) throws -> [HandshakeAction] {
        let message = try decodeHandshake(frame)
        switch state {
        case .awaitingCommit(let opening):
            guard case .commit(_, let commitment) = message else { throw unexpected(message, "the commitment") }
            let helloMessage = HandshakeMessage.hello(opening.contribution).encoded
            state = .awaitingReveal(
                Committed(
                    opening: opening, commitment: commitment, commitMessage: frame,
                    helloMessage: helloMessage))
            return [.send(helloMessage)]
        case .awaitingReveal(let committed):
            guard case .reveal(let contribution, let ciphertext) = message else {
                throw unexpected(message, "the reveal")
            }
            return try respond(committed, initiator: contribution, ciphertext: ciphertext, revealMessage: frame)
        case .awaitingConfirm(let confirming):
            guard case .initiatorConfirm(let mac) = message else {
                throw unexpected(message, "the initiator's confirmation")
            }
            try confirming.check(mac, from: .initiator)
            state = .complete
            return [.complete(confirming.outcome)]
        case .complete, .failed:
            throw ChannelError(.unexpectedMessage, "received a \(message.name) message after the handshake ended")
        }
    }

    private mutating func respond(
        _ committed: Committed, initiator: Contribution, ciphertext: [UInt8],
        revealMessage: [UInt8]
    ) throws -> [HandshakeAction] {
        let initiatorEncoded = initiator.encoded
        // The commitment is public, so an ordinary comparison is fine.
        guard KeySchedule.commitment(to: initiatorEncoded) == committed.commitment else {
            throw ChannelError(
                .commitmentMismatch, "the initiator's contribution does not match the commitment it opened with")
        }
        try checkSuites(ours: committed.opening.contribution, theirs: initiator)
        let peerKey = try parsePeerKey(initiator, as: K.self)
        let initiatorSecret = try decapsulate(ciphertext, with: committed.opening.privateKey, as: K.self)
        let (responderSecret, responseCiphertext) = encapsulate(peerKey)
        let responseMessage = HandshakeMessage.response(ciphertext: responseCiphertext).encoded
        let (outcome, derived) = finish(
            role: .responder, suite: K.suite, initiatorSecret: initiatorSecret, responderSecret: responderSecret,
            transcript: [committed.commitMessage, committed.helloMessage, revealMessage, responseMessage],
            commitment: committed.commitment, initiator: initiatorEncoded, responder: committed.opening.encoded)
        let confirming = Confirming(outcome: outcome, derived: derived)
        let mac = confirming.confirmation(of: .responder)
        state = .awaitingConfirm(confirming)
        return [.send(responseMessage), .send(HandshakeMessage.responderConfirm(mac: mac).encoded)]
    }
}

/// Both sides, once the keys are derived and until the confirmations are exchanged: the outcome and the keys.
private struct Confirming {
    let outcome: HandshakeOutcome
    let derived: KeySchedule.Derived

    /// The key confirmation `role` sends.
    func confirmation(of role: ChannelRole) -> [UInt8] {
        let key = role == .initiator ? derived.initiatorConfirmKey : derived.responderConfirmKey
        return KeySchedule.confirmation(key: key, role: role, transcriptHash: outcome.summary.transcriptHash)
    }

    /// Checks the peer's key confirmation, in constant time.
    func check(_ mac: [UInt8], from role: ChannelRole) throws {
        guard ConstantTime.equal(confirmation(of: role), mac) else {
            throw ChannelError(
                .keyConfirmationFailed,
                "the \(role == .initiator ? "initiator" : "responder")'s key confirmation "
                    + "is wrong: the handshake was altered or the keys differ")
        }
    }
}

/// What either side holds before it hears from the peer: its KEM private key and its contribution to a fresh
/// handshake, encoded once.
private struct Opening<K: ChannelKEM> {
    let privateKey: K.PrivateKey
    let contribution: Contribution
    let encoded: [UInt8]

    /// `suites` lists this side's suites, `K.suite` first.
    init(privateKey: K.PrivateKey, random: [UInt8], suites: [ChannelSuite]) {
        precondition(suites.first == K.suite, "the first suite is the one the key belongs to")
        self.privateKey = privateKey
        contribution = Contribution(suites: suites, publicKey: privateKey.publicKey.rawRepresentation, random: random)
        encoded = contribution.encoded
    }
}
