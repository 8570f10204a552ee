import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecureToken
import SecureWallet

/// How a contact exchange talks to its person: the PIN, what to show, and the words to confirm.
public protocol ContactInterface: AnyObject {
    /// The PIN for the exchange's signatures, read fresh each time it is needed.
    func readPIN() throws -> PIN
    /// An event to show: a short name, fields for `--json`, and a sentence for people.
    func event(_ name: String, _ fields: [String: String], _ text: String)
    /// Shows the words and the other wallet, and asks whether the other person read the same words; blocking.
    func review(_ review: ContactReview) -> Bool
}

/// Runs one contact exchange over an open SecureChannel: the loop (records in, timers, link failures) and
/// the actions of the pure `ContactExchangeMachine`: ranging, token signatures, ML-KEM-1024 with the wallet's
/// contact key (decapsulation in locked memory), the person's review.
public final class ContactDriver {
    /// The channel's record types for a whole contact message and for a fragment that more follow; a payment's
    /// messages use 1 and 2, so neither side can take one protocol's message for the other's.
    static let messageRecordType: UInt8 = 3
    static let fragmentRecordType: UInt8 = 4
    /// The PIN is held for the exchange's two signatures, never longer than a payment holds it.
    static let pinHoldSeconds = PeerDriver.pinHoldSecondsMax

    private let wallet: Wallet
    private let channel: SecureChannel
    private let interface: ContactInterface
    private let ranging: RangingConfiguration
    private var machine: ContactExchangeMachine
    private var unlockedAt: Date?
    /// Which login the armed timer ends; a newer login makes an older timer do nothing.
    private var holdGeneration = 0

    /// Prepares an exchange on an open channel: this side's role is the channel's.
    public init(
        wallet: Wallet, channel: SecureChannel, interface: ContactInterface, ranging: RangingConfiguration,
        policy: RangingPolicy
    ) throws {
        self.wallet = wallet
        self.channel = channel
        self.interface = interface
        self.ranging = ranging
        let summary = channel.summary
        let card = ContactCard(
            log: wallet.keyLog, contactKey: try wallet.contactKeyPair().publicKey,
            trustedIssuers: Array(
                try wallet.trustedIssuers().sorted { $0.hex < $1.hex }.prefix(ContactCard.trustedIssuerCountMax)))
        let context = ContactExchangeContext(
            role: summary.role == .initiator ? .initiator : .responder,
            transcriptHash: Digest32(exactly: summary.transcriptHash), channelBinding: summary.channelBinding,
            wordsInput: ContactWordsInput(
                commitment: summary.commitment, initiatorContribution: summary.initiatorContribution,
                responderContribution: summary.responderContribution),
            card: card, nonceContribution: NonceContribution(exactly: SystemRandom.bytes(NonceContribution.byteCount)),
            policy: policy)
        machine = ContactExchangeMachine(context: context)
    }

    /// Runs the exchange to its end. The channel is closed when it returns; the token stays logged in for
    /// the rest of the PIN's hold (the caller records the contact with it, then locks the token).
    public func run() -> ContactOutcome {
        defer { channel.close() }
        var queue = machine.start()
        var fragments: [UInt8] = []
        var currentWait: ContactWait?
        var deadline = Date()
        while true {
            while !queue.isEmpty {
                let action = queue.removeFirst()
                if case .finish(let outcome) = action { return outcome }
                queue += perform(action)
            }
            guard let wait = machine.wait else { return machine.outcome ?? .failed(.localFailure, byPeer: false, "") }
            if wait != currentWait {
                currentWait = wait
                deadline = Date(timeIntervalSinceNow: Double(wait.seconds))
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                interface.event("timeout", ["wait": wait.rawValue], "no answer while waiting for the \(wait.rawValue)")
                queue = machine.timeoutExpired()
                continue
            }
            do {
                guard let record = try channel.receive(timeoutSeconds: min(remaining, 0.25)) else {
                    queue = machine.linkDropped()
                    continue
                }
                guard record.type == Self.messageRecordType || record.type == Self.fragmentRecordType else {
                    queue = machine.malformed(
                        "the other side sent something that is not a contact exchange (record type \(record.type)); "
                            + "is it a receiver waiting for a payment?")
                    continue
                }
                fragments += record.payload
                guard fragments.count <= ContactMessage.encodedByteCountMax else {
                    queue = machine.localFailure("the other side sent a contact message over the size limit")
                    continue
                }
                guard record.type == Self.messageRecordType else { continue }
                let bytes = fragments
                fragments = []
                queue = deliver(bytes)
            } catch let error as ChannelError where error.code == .timeout {
                continue
            } catch {
                interface.event("link", ["error": "\(error)"], "the link dropped: \(error)")
                queue = machine.linkDropped()
            }
        }
    }

    private func deliver(_ bytes: [UInt8]) -> [ContactAction] {
        do {
            guard let message = try ContactMessage.decode(bytes) else {
                return machine.malformed("the other side sent a truncated contact message")
            }
            return try machine.receive(message)
        } catch let error as ContactProtocolError {
            return error.actions
        } catch {
            return machine.malformed("the other side sent a malformed contact message: \(error)")
        }
    }

    private func perform(_ action: ContactAction) -> [ContactAction] {
        do {
            switch action {
            case .range:
                let (source, samples) = try ranging.samples {
                    self.interface.event("distance", ["mm": "\($0)"], "  \($0) mm")
                }
                return machine.ranged(try RangingSummary(samples: samples), source: source)
            case .send(let message):
                try ChannelMessages.send(
                    message.encoded, on: channel, whole: Self.messageRecordType, fragment: Self.fragmentRecordType)
                return []
            case .signMeasurement(let measurement):
                // Meeting a contact again would replace a record the other side may not replace (a link that
                // drops after one confirm leaves the two with different secrets): both remove it first.
                if let existing = try wallet.contact(walletID: measurement.binding.peerWalletID) {
                    return machine.localFailure(
                        "this wallet is already your contact \(PeerText.quoted(existing.name)); to exchange again, "
                            + "both of you remove it first (`secure contact remove NAME`)")
                }
                try unlock("sign this exchange's measurement")
                return machine.measurementSigned(
                    try SignedContactMeasurement(signing: measurement, with: wallet.signer))
            case .encapsulate(let key):
                let (shared, ciphertext) = key.encapsulate()
                return machine.encapsulated(ciphertext: ciphertext, shared: shared)
            case .decapsulate(let ciphertext):
                return machine.decapsulated(try wallet.contactKeyPair().privateKey.decapsulate(ciphertext))
            case .review(let review):
                return machine.reviewed(accepted: interface.review(review))
            case .signConfirm(let confirm):
                try unlock("sign the confirm")
                return machine.confirmSigned(try SignedContactConfirm(signing: confirm, with: wallet.signer))
            case .finish:
                return []
            }
        } catch {
            return machine.localFailure("\(error)")
        }
    }

    /// Logs in with the PIN unless a login of this exchange is younger than the hold; an older one is
    /// dropped and the PIN asked again.
    public func unlock(_ why: String) throws {
        if let unlockedAt, -unlockedAt.timeIntervalSinceNow < Self.pinHoldSeconds, wallet.token.isUnlocked { return }
        wallet.token.lock()
        interface.event("pin", [:], "the token needs the PIN to \(why)")
        try wallet.token.unlock(pin: try interface.readPIN(), confirmFinalTry: false)
        unlockedAt = Date()
        // The login (and the PIN a per-signature login keeps) ends at the hold's deadline even while the
        // person is still reading the words: a later signature asks again.
        holdGeneration += 1
        let generation = holdGeneration
        nonisolated(unsafe) let token = wallet.token
        nonisolated(unsafe) weak var driver = self
        HoldTimers.shared.arm(after: Self.pinHoldSeconds) {
            guard let driver, driver.holdGeneration == generation else { return }
            token.lock()
        }
    }
}

/// Sends one protocol message over a channel as records: whole when it fits, otherwise fragments and a last
/// whole record (the same framing for payments and contact exchanges).
public enum ChannelMessages {
    /// Sends `bytes` as records of type `whole`, after fragments of type `fragment` when they do not fit one.
    public static func send(_ bytes: [UInt8], on channel: SecureChannel, whole: UInt8, fragment: UInt8) throws {
        let chunk = ChannelLimits.recordPayloadByteCountMax
        var offset = 0
        while bytes.count - offset > chunk {
            try channel.send(type: fragment, payload: Array(bytes[offset..<offset + chunk]))
            offset += chunk
        }
        try channel.send(type: whole, payload: Array(bytes[offset...]))
    }
}
