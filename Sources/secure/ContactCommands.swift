import CommandLineSupport
import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecureDiscovery
import SecurePeer
import SecureWallet

/// `secure contact add`: the contact exchange of seed 004 (docs/PROTOCOL.md, "Contacts → The exchange").
enum ContactCommands {
    static let addHelp = """
        Usage:
          secure contact add --near --name NAME [--near-seconds S] RANGING
          secure contact add --listen ADDR --name NAME RANGING     (or --to HOST:PORT: the other side listens)
        Both people run it at once, devices held together. The wallets find each other on the local network
        (--near: both announce, the one with the smaller announcement nonce connects), open a secure channel,
        range, and exchange identities only when both measure at most 250 mm and agree within 100 mm. Each
        side then signs its measurement (the PIN), both encapsulate to the other's ML-KEM-1024 contact key,
        and both screens show five contact words. Read them aloud to each other; answer y only when the other
        person read exactly the same words. The contact is "verified" when both confirmed, "unconfirmed" when
        the other side's confirm never arrived. NAME is your own name for the contact.
        RANGING: --ranging-file PATH, or --allow-simulated-ranging --distance MM on both sides (shown loudly).
        """

    static let addOptions: Set<String> = walletOptions.union([
        "name", "listen", "to", "near-seconds", "distance", "ranging-file", "seed",
    ])
    static let addFlags: Set<String> = appendingFlags.union(["near", "allow-simulated-ranging"])
    /// How long `--near` or `--listen` waits for the other side by default: two people getting ready.
    static let waitSecondsDefault = 60.0

    static func add(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: addOptions, flags: addFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let ways = [arguments.flag("near"), arguments.value("listen") != nil, arguments.value("to") != nil]
        guard ways.filter({ $0 }).count == 1 else {
            throw UsageError("say how to meet the other wallet: --near, --listen ADDR or --to HOST:PORT (one of them)")
        }
        let name = try arguments.required("name")
        if let problem = ContactName.problem(name) { throw UsageError("--name: \(problem)") }
        let seconds = try waitSeconds(arguments)
        let (wallet, person) = try PeerCommands.openLockedWallet(arguments)
        guard try wallet.contact(named: name) == nil else {
            throw UsageError(
                "you already have a contact named \(PeerText.escaped(name, limit: 64)); choose another --name")
        }
        _ = try wallet.contactKeyPair()
        let (ranging, policy) = try PeerCommands.ranging(arguments, person: person)
        let channel: SecureChannel
        if arguments.flag("near") {
            channel = try nearChannel(seconds: seconds, person: person)
        } else if let listen = arguments.value("listen") {
            let (host, port) = try PeerCommands.address(listen)
            let listener = try TCPListener(host: host, port: port)
            defer { listener.close() }
            person.event(
                "listening", ["address": "\(host):\(listener.port)"], "listening on \(host):\(listener.port)")
            channel = try acceptExchange(listener, seconds: seconds, person: person)
        } else {
            let (host, port) = try PeerCommands.address(arguments.value("to"))
            channel = try SecureChannel.initiate(over: try TCPTransport.connect(host: host, port: port))
        }
        person.event(
            "channel", ["role": channel.summary.role == .initiator ? "initiator" : "responder"],
            "secure channel up; ranging (nothing that names either wallet is sent until both measure "
                + "\(ContactGateRule.distanceMillimetresMax) mm or less)")
        let driver = try ContactDriver(
            wallet: wallet, channel: channel, interface: person, ranging: ranging, policy: policy)
        defer { wallet.token.lock() }
        switch driver.run() {
        case .added(let result):
            return try store(result, name: name, wallet: wallet, driver: driver, person: person)
        case .failed(_, _, let why):
            person.event("failed", ["reason": why], "no contact added: \(why)")
            return .refused
        }
    }

    private static func store(
        _ result: ContactExchangeResult, name: String, wallet: Wallet, driver: ContactDriver, person: TerminalPerson
    ) throws -> ExitCode {
        let record = try ContactRecord(
            walletID: result.peer.walletID, log: result.peer.log, contactKey: result.peer.contactKey.rawRepresentation,
            name: name, addedAt: Wallet.systemClock(), verification: result.verified ? .verified : .unconfirmed,
            rangingSource: result.source, medianMillimetres: result.medianMillimetres,
            trustedIssuers: result.peer.trustedIssuers)
        try driver.unlock("record the contact")
        // The contact's log is followed like any peer's from now on: a later payment checks its key against
        // it, and a log that conflicts with one seen before is evidence, not a contact.
        switch try wallet.followKeyEvents(of: result.peer.walletID, events: result.peer.log.events) {
        case .followed: break
        case .refused(let error): throw error
        case .conflict:
            throw WalletError(
                .refused,
                "the other wallet's key-event log conflicts with the one this wallet knows (two events with one "
                    + "sequence): the evidence is kept; no contact added")
        }
        // The driver refused an existing contact before signing; one added meanwhile by another process is
        // refused here by the wallet (one wallet id, one contact).
        try wallet.addContact(record, secret: result.secret)
        let state = result.verified ? "verified" : "unconfirmed"
        person.event(
            "added", ["name": name, "wallet": result.peer.walletID.hex, "verification": state],
            result.verified
                ? "contact \(PeerText.escaped(name, limit: 64)) added, verified (both confirmed the words): wallet "
                    + result.peer.walletID.hex
                : "contact \(PeerText.escaped(name, limit: 64)) added as UNCONFIRMED: the other side's confirm never "
                    + "arrived; meet again to verify")
        return result.verified ? .success : .pending
    }

    private static func waitSeconds(_ arguments: Arguments) throws -> Double {
        try arguments.value("near-seconds").map { text -> Double in
            guard let value = Double(text), value > 0, value <= 600 else {
                throw UsageError("--near-seconds takes more than 0 and at most 600 seconds")
            }
            return value
        } ?? waitSecondsDefault
    }

    /// Both sides announce and browse; the side whose announcement nonce is smaller connects to the other,
    /// the other waits for it (docs/PROTOCOL.md, "Discovery → Tie-break"). A service that turns out not to
    /// run an exchange (a receiver waiting for a payment) is left for the next.
    private static func nearChannel(seconds: Double, person: TerminalPerson) throws -> SecureChannel {
        let listener = try TCPListener(host: "0.0.0.0", port: 0)
        defer { listener.close() }
        let (announcer, record) = try PeerCommands.announce(host: "0.0.0.0", port: listener.port, person: person)
        defer { announcer.stop() }
        let own = Set(NetworkInterfaces.multicastIPv4().map(\.address))
        let deadline = Date(timeIntervalSinceNow: seconds)
        var tried: Set<String> = []
        person.event("waiting", [:], "looking for the other wallet for \(Int(seconds)) s")
        while deadline.timeIntervalSinceNow > 0 {
            if let transport = try? listener.accept(timeoutSeconds: 0.5) {
                do {
                    return try SecureChannel.respond(over: transport, timeoutSeconds: handshakeSeconds)
                } catch {
                    person.event("ignored", ["reason": "\(error)"], "  -  an incoming connection failed: \(error)")
                    continue
                }
            }
            let found = try Browser.browse(
                type: DiscoveryRecord.payServiceType, seconds: min(2, max(0.5, deadline.timeIntervalSinceNow)),
                minimumSeconds: 0.5)
            for service in found where service.instanceName != announcer.instanceName {
                let key = "\(service.instanceName)@\(service.address):\(service.port)"
                guard !tried.contains(key), refusal(service, own) == nil,
                    let theirs = try? DiscoveryRecord(txt: service.txtPairs),
                    record.nonce.lexicographicallyPrecedes(theirs.nonce)
                else { continue }
                tried.insert(key)
                person.event(
                    "found", ["instance": service.instanceName, "address": service.address, "port": "\(service.port)"],
                    "connecting to \(PeerText.escaped(service.instanceName, limit: 40)) at "
                        + "\(service.address):\(service.port) (its nonce is the larger, so this side connects)")
                do {
                    return try SecureChannel.initiate(
                        over: try TCPTransport.connect(host: service.address, port: service.port))
                } catch {
                    person.event("ignored", ["reason": "\(error)"], "  -  it did not answer: \(error)")
                }
            }
        }
        throw DiscoveryError(
            .notFound,
            "no other wallet exchanged contacts within \(Int(seconds)) s; both people run `secure contact add --near` "
                + "at the same time, on the same network")
    }

    /// The first connection whose handshake completes within `seconds`: a connection that sends garbage or
    /// stays silent is logged and the listener keeps waiting, so nobody can end an exchange by racing the
    /// other person to the port. Handshakes here are shorter than a receiver's: the other device is in reach.
    static let handshakeSeconds = 5.0

    private static func acceptExchange(_ listener: TCPListener, seconds: Double, person: TerminalPerson) throws
        -> SecureChannel
    {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while deadline.timeIntervalSinceNow > 0 {
            let transport: TCPTransport
            do {
                transport = try listener.accept(timeoutSeconds: min(1, deadline.timeIntervalSinceNow))
            } catch let error as ChannelError where error.code == .timeout {
                continue
            }
            do {
                return try SecureChannel.respond(
                    over: transport, timeoutSeconds: min(handshakeSeconds, max(1, deadline.timeIntervalSinceNow)))
            } catch {
                person.event("ignored", ["reason": "\(error)"], "  -  a connection failed its handshake: \(error)")
            }
        }
        throw DiscoveryError(.notFound, "no other wallet connected within \(Int(seconds)) s")
    }

    /// Opens a file sealed to one of this wallet's contacts, or nil when no contact's file key opens it.
    static func unseal(_ bytes: [UInt8], wallet: Wallet) throws -> [UInt8]? {
        for contact in try wallet.contacts() {
            let key = try ContactSecret.fileKey(secret: try wallet.contactSecret(walletID: contact.walletID))
            if ContactSealedFile.isFor(bytes, fileKey: key) {
                return try ContactSealedFile.open(bytes, fileKey: key, recipient: wallet.walletID)
            }
        }
        return nil
    }

    private static func refusal(_ service: FoundService, _ own: Set<String>) -> Error? {
        PeerCommands.refusal(of: service, ownAddresses: own)
    }
}

extension TerminalPerson: ContactInterface {
    /// Whether this process has a controlling terminal to ask on.
    static var hasTerminal: Bool {
        let terminal = open("/dev/tty", O_RDONLY | O_CLOEXEC)
        guard terminal >= 0 else { return false }
        close(terminal)
        return true
    }

    func review(_ review: ContactReview) -> Bool {
        let words = review.words.words
        let source = review.peer.walletID.hex
        event(
            "words", ["words": words.joined(separator: " "), "peer": source],
            """
            Contact words - read them aloud to each other (they are NOT recovery words; never read those to anyone):

                \(words.joined(separator: "   "))

            Other wallet: \(source)
            Measured \(review.ownMillimetres) mm here, \(review.peerMillimetres) mm there.
            """)
        let question = "Did the other person read exactly these five words? [y/N] "
        let answer: String?
        if Self.hasTerminal {
            answer = TerminalPerson.ask(question, timeoutSeconds: Double(ContactWait.confirm.seconds))
        } else {
            // No terminal (a test, or a person's own wrapper): the answer is a line on standard input.
            print(question)
            fflush(nil)
            answer = readLine(strippingNewline: true)
        }
        return answer?.lowercased() == "y" || answer?.lowercased() == "yes"
    }
}

/// Contacts in payments (docs/PROTOCOL.md, "Contacts → Paying a contact").
extension PeerCommands {
    /// This wallet's contacts by wallet id, for the prompts.
    static func contactNames(_ wallet: Wallet) throws -> [WalletID: String] {
        Dictionary(try wallet.contacts().map { ($0.walletID, $0.name) }) { first, _ in first }
    }

    /// The discovery key of each contact, the most recently added first (an announcement tags the first eight).
    static func contactDiscoveryKeys(_ wallet: Wallet) throws -> [SecretBytes] {
        try wallet.contacts().sorted { $0.addedAt > $1.addedAt }.map {
            try ContactSecret.discoveryKey(secret: try wallet.contactSecret(walletID: $0.walletID))
        }
    }

    /// The receiver's answer to a probe: under the first contact key whose probe for this channel matches
    /// (every key is tried, so the time does not say which), or nil.
    static func answer(_ probe: [UInt8], binding: [UInt8], keys: [SecretBytes]) -> [UInt8]? {
        var answer: [UInt8]?
        for key in keys {
            let matches = ConstantTime.equal(probe, ContactSecret.probe(discoveryKey: key, channelBinding: binding))
            if matches, answer == nil { answer = ContactSecret.answer(discoveryKey: key, channelBinding: binding) }
        }
        return answer
    }

    /// How many announcements carrying a contact's tag `pay --to NAME` tries.
    static let contactCandidatesMax = 4

    /// `pay --to NAME`: browses for an announcement tagged under the contact's discovery key, connects, and
    /// proves on the new channel that the receiver holds that key before anything else is sent. An
    /// announcement replayed or relayed by someone without the key gets the probe and nothing more.
    static func contactChannel(
        named name: String, wallet: Wallet, arguments: Arguments, person: TerminalPerson
    ) throws -> SecureChannel {
        guard !arguments.flag("near") else { throw UsageError("--near and --to both say where to pay; pick one") }
        guard let contact = try wallet.contact(named: name) else {
            throw UsageError(
                "\(PeerText.escaped(name, limit: 64)) is neither HOST:PORT nor the name of a contact "
                    + "(`secure contact list`)")
        }
        person.expectedContact = contact.walletID
        let key = try ContactSecret.discoveryKey(secret: try wallet.contactSecret(walletID: contact.walletID))
        let seconds =
            try arguments.value("near-seconds").map { text -> Double in
                guard let value = Double(text), value > 0, value <= Browser.secondsMax else {
                    throw UsageError("--near-seconds takes more than 0 and at most \(Int(Browser.secondsMax)) seconds")
                }
                return value
            } ?? nearSecondsDefault
        let own = Set(NetworkInterfaces.multicastIPv4().map(\.address))
        let found = try Browser.browse(type: DiscoveryRecord.payServiceType, seconds: seconds)
        let shown = PeerText.escaped(name, limit: 64)
        // Copies of the contact's announcement (replayed tags) can point at tarpits: at most four are tried,
        // each with a short handshake, so a flood costs the payer seconds, not minutes.
        var tried = 0
        for service in found {
            guard refusal(of: service, ownAddresses: own) == nil,
                (try? DiscoveryRecord(txt: service.txtPairs))?.tagChecks(under: key) == true
            else { continue }
            guard tried < contactCandidatesMax else {
                person.event(
                    "ignored", ["instance": service.instanceName, "reason": "too many tagged announcements"],
                    "  -  more announcements carry \(shown)'s tag than a payer tries (\(contactCandidatesMax)); "
                        + "someone copies them")
                break
            }
            tried += 1
            person.event(
                "found", ["instance": service.instanceName, "address": service.address, "port": "\(service.port)"],
                "an announcement at \(service.address):\(service.port) carries \(shown)'s tag; proving it is \(shown)")
            do {
                let channel = try SecureChannel.initiate(
                    over: try TCPTransport.connect(host: service.address, port: service.port),
                    timeoutSeconds: ContactCommands.handshakeSeconds)
                if try PeerDriver.probe(
                    channel: channel, discoveryKey: key, timeoutSeconds: ContactCommands.handshakeSeconds)
                {
                    person.event(
                        "probe", ["answered": "yes"],
                        "it answered \(shown)'s probe on this channel; the payment starts (contact, proof pending)")
                    return channel
                }
                channel.close()
            } catch {
                person.event("ignored", ["reason": "\(error)"], "  -  it did not answer: \(error)")
                continue
            }
            person.event(
                "refused", ["reason": "probe-failed", "address": service.address],
                "refused: the wallet at \(service.address):\(service.port) could not prove it is \(shown) (a replayed "
                    + "or relayed announcement); nothing was sent to it")
        }
        throw DiscoveryError(
            .notFound,
            "\(shown) is not announcing nearby (within \(seconds) s): they run `secure receive --announce --count 1`")
    }
}
