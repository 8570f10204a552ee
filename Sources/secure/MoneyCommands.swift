import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureToken
import SecureWallet

/// A wallet card file written by `secure wallet show --card`: the wallet id and the key-event log that
/// proves it. Nothing else names a wallet to pay or mint to, so the payer always holds the payee's log.
func readWalletCard(_ path: String) throws -> WalletCard {
    let text = String(decoding: try readFile(path, what: "the wallet card"), as: UTF8.self)
    do {
        return try WalletCard.parse(text)
    } catch let error as any CodedError {
        throw UsageError("\(path) is not a wallet card: \(error.message)")
    }
}

/// Reads an envelope file (a transfer, receipt or refusal with its signer's key-event log), or says on
/// stderr why it is not one and returns nil.
func readEnvelope(_ path: String, what: String, wallet: Wallet? = nil) throws -> Envelope? {
    var bytes = try readFile(path, what: "the \(what)")
    if ContactSealedFile.isSealed(bytes) {
        guard let wallet else {
            printError("secure: \(path) is sealed to a contact; only a transfer can be; nothing was recorded")
            return nil
        }
        guard let opened = try ContactCommands.unseal(bytes, wallet: wallet) else {
            printError(
                "secure: \(path) is sealed to a contact, and none of this wallet's contacts' keys opens it; "
                    + "nothing was recorded")
            return nil
        }
        bytes = opened
    }
    do {
        guard let envelope = try Envelope.decode(bytes) else {
            printError("secure: \(path) is not a \(what) (truncated); nothing was recorded")
            return nil
        }
        return envelope
    } catch let error as any CodedError {
        printError("secure: \(path) is not a \(what): \(error.message); nothing was recorded")
        return nil
    }
}

/// Why a statement was dropped, for a person.
func dropText(_ reason: DropReason) -> String {
    switch reason {
    case .badSignature: return "its signature does not verify"
    case .unknownSigner: return "its signer's key-event log does not show its key in force for the wallet it claims"
    case .unrelated: return "it is about another transfer, or signed by another wallet than its payee"
    case .retiredSigner:
        return "it is signed by a key after that key's retirement (kept as fork evidence)"
    }
}

/// Writes bytes to --out, durably, and only as a new file: one that exists, or races in while this one is
/// written, is never replaced (a voucher or transfer file is money).
func writeOutput(_ bytes: [UInt8], to path: String) throws {
    do {
        try DurableFile.create(bytes, at: path, mode: 0o600)
    } catch let error as StoreError where error.code == .exists {
        throw UsageError("\(path) exists; it is never overwritten (a voucher or transfer file is money)")
    }
}

func describe(_ outcome: StatementOutcome, what: String) -> (String, ExitCode) {
    switch outcome {
    case .recorded(let entry):
        return ("\(what) recorded as entry \(entry.position): \(entry.amount.map(MoneyText.format) ?? "")", .success)
    case .duplicate(let entry):
        return ("\(what) was already recorded as entry \(entry.position); nothing changed", .success)
    case .conflict(let entry):
        return (
            "\(what) reuses an id already recorded with another payload; kept as evidence in entry \(entry.position), "
                + "no money moved", .refused
        )
    case .refused(.retiredIssuerKey, let entry, _):
        return (
            "\(what) refused (retiredIssuerKey): it is signed by a key its issuer has rotated away from, and this "
                + "wallet had not recorded it before it learned of the rotation (a stolen retired key would look like "
                + "this); kept as entry \(entry.position) for the issuer, who can mint it again with its current key",
            .refused
        )
    case .refused(let reason, let entry, _):
        return ("\(what) refused (\(reason)); recorded as entry \(entry.position)", .refused)
    case .policyRefusal(let reason):
        let advice: String
        switch reason {
        case .untrustedIssuer: advice = "the issuer is not trusted; `secure issuer trust CARD` first"
        case .untrustedAsset:
            advice =
                "it moves an asset whose issuer this wallet does not trust (`secure issuer trust CARD` if you mean "
                + "to take it); nothing was signed, and the payer's money waits as pending"
        case .redemptionExceedsOutstanding:
            advice = "it pays back more of this issuer's money than is outstanding: money nobody minted"
        case .proximityRequired, .proximityUnverified:
            advice = "it carries no proximity proof you verified; accept it with --no-proximity if you meant to"
        case .channelBindingMismatch: advice = "it was made for another session"
        case .notAddressedToThisWallet: advice = "it is not addressed to this wallet; nothing was signed either"
        case .payerForked:
            advice =
                "the payer signed a history that contradicts one this wallet holds of it (a restored or forked "
                + "wallet); the fork evidence is kept: `secure evidence export --out DIR`"
        case .consistencyUnproven:
            advice =
                "nothing proves it extends the payer's history this wallet already holds (a payer restored from an "
                + "old copy looks like this); both checkpoints are kept for the issuer's clearing"
        case .consistencyProofInvalid: advice = "its consistency proof does not lead to its own checkpoint"
        case .signedBeforeRotation:
            advice =
                "it is signed by a key the payer has rotated away from since (a stolen retired key would look like "
                + "this); the payer pays again with its current key"
        case .payerBanned(let digest):
            advice =
                "this wallet holds proof, its own or a proven listing by the issuer's clearing, that the payer "
                + "signed two histories (evidence \(digest.hex); `secure evidence fetch` and `secure evidence "
                + "verify` check it); it takes no more payments from that wallet until the issuer's clearing "
                + "settles it"
        case .staleTransfer:
            advice = "it is older than a payment this wallet already holds from the payer, and nothing links the two"
        case .balanceOverflow:
            advice = "it would take the balance past the largest amount a wallet can hold; deposit it after spending"
        case .offlineLimitExceeded(let allowance):
            advice =
                "this wallet credits at most \(MoneyText.format(allowance.limit.amount)) a \(allowance.limit.window) "
                + "from one payer offline and has credited (or approved) \(MoneyText.format(allowance.credited)) from "
                + "this one in that window; nothing was signed, so the same file can be accepted once the window "
                + "has room, or after `secure policy set --offline-limit`"
        }
        return ("\(what) not accepted: \(advice). Nothing was recorded", .refused)
    case .dropped(let reason):
        return (
            "\(what) dropped: \(dropText(reason)); anyone could have made it. Nothing was recorded",
            .verification
        )
    }
}

enum MoneyCommands {
    static let help = """
        Usage:
          secure issuer init --token URI --backup-token URI [--wallet DIR] [--label L] [--json]
              Makes an issuer: a wallet incepted as one, whose ledger records each voucher it mints as a
              liability and each payment back to it as a redemption. Its card (`secure wallet show --card`)
              is what other wallets trust.
          secure issuer show [ID] [--json]            an issuer's outstanding total per currency and its
                                                      clearing in force; with ID, a trusted issuer's clearing
          secure issuer delegate-clearing --clearing-key URI --tls-key FILE --url URL [--clearing-pin-source SPEC]
              Names the issuer's clearing in its key-event log (a clearing delegation, key-event kind 3): the
              clearing key (a P-256 key on a token, NOT always-authenticate: the service signs unattended),
              the SHA-256 of the TLS key's SubjectPublicKeyInfo (FILE: a PEM public or private key or
              certificate) and the https URL. The issuer key signs it, the clearing key countersigns it (a PIN
              for each token). A later delegation replaces it. Wallets built before it refuse the issuer's log.
          secure issuer trust CARD                    trust an issuer (a signed settings entry)
          secure issuer untrust ID                    stop taking an issuer's money (money held stays)
          secure mint --to CARD --amount "50.00 EUR" --out FILE   (in the issuer's wallet)
              Signs a voucher for the wallet of CARD and records it as outstanding.
          secure deposit FILE                         credit a voucher of a trusted issuer, once
          secure spend --to CARD|CONTACT --amount A --category C [--note N] [--issuer ID] [--override-budget] --out FILE
              Budget check, PIN, sign, append: writes the signed transfer (no proximity proof) in an
              envelope with this wallet's key-event log. A payment moves one asset: --issuer (an issuer id
              or its first hex digits) picks it when the wallet holds the currency of several issuers.
              To a contact (its name), the file is sealed to it: only that contact's wallet opens it.
          secure accept FILE [--no-proximity] [--receipt-out FILE] [--refusal-out FILE]
              Credit a transfer, idempotently; a transfer without a proximity proof needs --no-proximity.
          secure reverse REFUSAL_FILE                 append the reversal the payee's signed refusal allows
          secure confirm RECEIPT_FILE                 record the payee's countersigned receipt (final)
          secure pending [--json]                     payments out without a receipt or reversal
          secure pending --export ID --out FILE       write a pending payment's transfer file again
        """

    static func issuerInit(_ words: [String]) throws -> ExitCode {
        try WalletCommands.initialize(words, isIssuer: true)
    }

    static func issuerTrust(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: appendingFlags)
        let card = try readWalletCard(try arguments.positionals(1, "one issuer CARD file")[0])
        let wallet = try openWallet(arguments, .appending)
        let before = try wallet.peerKeyLog(of: card.walletID)?.head
        if try wallet.trust(issuer: card) == nil {
            let after = try wallet.peerKeyLog(of: card.walletID)?.head
            if let after, let before, after != before {
                print(
                    "already trusting issuer \(card.walletID.hex); now following its key-event log to event "
                        + "\(after.sequence) (it rotated since event \(before.sequence))")
            } else {
                print("already trusting issuer \(card.walletID.hex); nothing changed")
            }
        } else {
            print(
                "trusting issuer \(card.walletID.hex) (its assets are shown as issued by \(Asset.shortID(card.walletID)))"
            )
        }
        return .success
    }

    static func issuerUntrust(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: appendingFlags)
        let text = try arguments.positionals(1, "one issuer wallet id (hex)")[0]
        guard let id = WalletID(hex: text.lowercased()) else {
            throw UsageError("\(text) is not a wallet id (64 hex digits)")
        }
        let wallet = try openWallet(arguments, .appending)
        if try wallet.untrust(issuer: id) == nil {
            print("issuer \(id.hex) was not trusted; nothing changed")
        } else {
            print("no longer trusting issuer \(id.hex): no new deposits or payments of its assets (money held stays)")
        }
        return .success
    }

    static func issuerShow(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags.union(jsonFlag))
        let positionals = arguments.positional
        guard positionals.count <= 1 else { throw UsageError("at most one issuer wallet id") }
        let wallet = try openWallet(arguments, .reading)
        if let text = positionals.first {
            // The clearing has no --json shape yet (docs/JSON.md): a trusted issuer's is shown as text.
            guard !arguments.flag("json") else { throw UsageError("issuer show ID has no --json form yet") }
            return try showTrustedIssuer(text, wallet: wallet)
        }
        guard wallet.isIssuer else {
            throw UsageError(
                "the wallet at \(wallet.paths.directory) is not an issuer; `secure issuer init` makes one")
        }
        let outstanding = wallet.state.balances.sorted { $0.key < $1.key }.filter { !$0.value.isZero }
        if arguments.flag("json") {
            JSONOutput.print(
                .issuer,
                [
                    "issuer": wallet.walletID.hex,
                    "outstanding": outstanding.map { JSONOutput.amount($0.value, issuer: $0.key.issuer) },
                ])
        } else {
            print("issuer \(wallet.walletID.hex)")
            if outstanding.isEmpty { print("nothing outstanding") }
            for (_, amount) in outstanding { print("outstanding \(MoneyText.format(amount))") }
            printClearing(wallet.keyLog.clearingInForce)
        }
        return .success
    }

    /// `issuer show ID`: the key event in force and clearing of an issuer this wallet follows.
    static func showTrustedIssuer(_ text: String, wallet: Wallet) throws -> ExitCode {
        guard let id = WalletID(hex: text.lowercased()) else {
            throw UsageError("\(text) is not a wallet id (64 hex digits)")
        }
        guard let log = try wallet.peerKeyLog(of: id), log.isIssuer else {
            throw UsageError("this wallet follows no issuer \(id.hex); `secure issuer trust CARD` trusts one")
        }
        print("issuer \(id.hex)")
        print("key in force: event \(log.current.sequence) of \(log.events.count)")
        printClearing(log.clearingInForce)
        return .success
    }

    static func printClearing(_ clearing: ClearingDelegation?) {
        guard let clearing else {
            print("clearing: none delegated")
            return
        }
        print("clearing \(clearing.url)")
        print("  TLS key SHA-256 \(clearing.tlsKeyDigest.hex)")
        print(
            "  clearing key \(Hex.encode(clearing.clearingKey.fingerprint)) (\(clearing.clearingKeyOrigin.description))"
        )
    }

    static func issuerDelegateClearing(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["clearing-key", "tls-key", "url", "clearing-pin-source"]),
            flags: appendingFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let keyURI = try PKCS11URI(try arguments.required("clearing-key"))
        let tlsPath = try arguments.required("tls-key")
        let url = try arguments.required("url")
        let tlsText = String(decoding: try readFile(tlsPath, what: "the TLS key"), as: UTF8.self)
        let tlsKeyDigest: Digest32
        do {
            tlsKeyDigest = Digest32(exactly: try TLSKeyPin.digest(pem: tlsText))
        } catch let error as CryptoError {
            throw UsageError("\(tlsPath): \(error.message)")
        }
        // The clearing token's PIN is read before the wallet takes its lock, as `keys rotate` reads the backup's.
        let token = try TokenLibrary.shared.token(keyURI)
        let clearingToken = try TokenSession(
            token: token, pin: try readClearingPIN(arguments, uri: keyURI, token: token),
            confirmFinalTry: arguments.flag("confirm-final-try"), policy: try tokenPolicy(arguments))
        defer { clearingToken.close() }
        let wallet = try openWallet(arguments, .appending)
        defer { (wallet.token as? TokenSession)?.close() }
        guard wallet.isIssuer else {
            throw UsageError(
                "the wallet at \(wallet.paths.directory) is not an issuer; only an issuer names a clearing")
        }
        printError(
            "secure: warning: wallets built before clearing delegations (key-event kind 3) refuse this issuer's "
                + "key-event log, and with it its vouchers and card; update every wallet first")
        let signed = try wallet.delegateClearing(
            clearingToken: clearingToken, clearingKey: keyURI, tlsKeyDigest: tlsKeyDigest, url: url)
        print(
            "clearing delegated in key event \(signed.event.sequence) (ledger entry \(signed.event.ledgerPosition)); "
                + "give holders the issuer's new card (`secure wallet show --card`)")
        printClearing(signed.event.clearing)
        return .success
    }

    static func mint(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["to", "amount", "out"]), flags: appendingFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let recipient = try readWalletCard(try arguments.required("to"))
        let amount = try MoneyText.parse(try arguments.required("amount"))
        guard !amount.isZero else { throw UsageError("a voucher's amount must be positive") }
        let out = try arguments.required("out")
        guard !FileManager.default.fileExists(atPath: out) else {
            throw UsageError("\(out) exists; it is never overwritten")
        }
        let wallet = try openWallet(arguments, .appending)
        let envelope = try wallet.mint(to: recipient, amount: amount)
        try writeOutput(envelope.encoded, to: out)
        print(
            "voucher for \(MoneyText.format(amount)) to \(recipient.walletID.hex) written to \(out); "
                + "outstanding now \(MoneyText.format(wallet.state.balance(Asset(issuer: wallet.walletID, currency: amount.currency))))"
        )
        return .success
    }

    static func deposit(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: appendingFlags)
        let path = try arguments.positionals(1, "one voucher FILE")[0]
        guard let envelope = try readEnvelope(path, what: "voucher") else { return .verification }
        let wallet = try openWallet(arguments, .appending)
        let outcome: StatementOutcome
        do {
            outcome = try wallet.deposit(envelope)
        } catch let error as FormatError {
            printError("secure: \(path) does not hold a voucher: \(error.message); nothing was recorded")
            return .verification
        } catch let error as KeyEventError {
            printError("secure: \(path): \(error.message); nothing was recorded")
            return .verification
        }
        let (message, code) = describe(outcome, what: "voucher")
        (code == .success ? { print($0) } : printError)(message)
        return code
    }

    static func spend(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["to", "amount", "category", "note", "out", "issuer"]),
            flags: appendingFlags.union(["override-budget"]))
        _ = try arguments.positionals(0, "no positional arguments")
        let to = try arguments.required("to")
        let amount = try MoneyText.parse(try arguments.required("amount"))
        guard !amount.isZero else { throw UsageError("a payment's amount must be positive") }
        let category = try arguments.required("category")
        try Budget.validateCategory(category)
        let out = try arguments.required("out")
        // --to names a contact, or a card file: a file to a contact is sealed to it (its pairwise file key).
        let wallet = try openWallet(arguments, .appending)
        let payee: WalletCard
        var sealing: (key: SecretBytes, recipient: WalletID)?
        if let contact = try wallet.contact(named: to) {
            payee = WalletCard(log: try wallet.peerKeyLog(of: contact.walletID) ?? contact.log)
            sealing = (
                try ContactSecret.fileKey(secret: try wallet.contactSecret(walletID: contact.walletID)),
                contact.walletID
            )
        } else {
            payee = try readWalletCard(to)
        }
        do {
            let amount = try wallet.asset(for: amount, issuer: arguments.value("issuer"), payee: payee.walletID)
            if case .alert(let usage) = try wallet.checkSpend(
                amount: amount, category: category, overrideBudget: arguments.flag("override-budget"))
            {
                printError(
                    "secure: budget alert: \(usage.category) will be above 80% of \(MoneyText.format(usage.limit)) this window"
                )
            }
            let note = try plainText(arguments, "note") ?? ""
            // The debit is committed before the file is written, so the file's name is taken first (O_EXCL,
            // O_NOFOLLOW): nothing that exists or is planted there is followed or replaced afterwards.
            do {
                try DurableFile.reserve(out)
            } catch let error as StoreError where error.code == .exists {
                throw UsageError("\(out) exists; it is never overwritten (a transfer file is money)")
            }
            let envelope: Envelope
            do {
                envelope = try wallet.spend(
                    to: payee, amount: amount, category: category, note: note,
                    overrideBudget: arguments.flag("override-budget"))
            } catch {
                unlink(out)
                throw error
            }
            do {
                let bytes =
                    try sealing.map {
                        try ContactSealedFile.seal(envelope.encoded, fileKey: $0.key, recipient: $0.recipient).encoded
                    } ?? envelope.encoded
                try DurableFile.write(bytes, to: out)
            } catch {
                let id = (try? envelope.transfer().0.payload.order.transferID.hex) ?? "?"
                printError(
                    "secure: the payment is debited (pending \(id)) but \(out) could not be written: \(error). "
                        + "Write it again with `secure pending --export \(id) --out FILE`")
                return .failure
            }
            print(
                "paid \(MoneyText.format(amount)) to \(payee.walletID.hex) (\(category)); signed transfer in \(out)"
                    + (sealing == nil ? ". " : ", sealed to contact \(PeerText.escaped(to, limit: 64)). ")
                    + "It carries no proximity proof: the payee accepts it with --no-proximity")
            return .success
        } catch let refusal as Wallet.SpendRefusal {
            printError("secure: payment refused before signing: \(refusal)")
            return .refused
        }
    }

    static func accept(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["receipt-out", "refusal-out"]),
            flags: appendingFlags.union(["no-proximity"]))
        let path = try arguments.positionals(1, "one transfer FILE")[0]
        // A file sealed to a contact needs the wallet (its contacts' keys) to be read; any other is read first,
        // so a file that is not a transfer is refused before the wallet is opened.
        let sealed = ContactSealedFile.isSealed(try readFile(path, what: "the transfer"))
        var opened: Wallet? = sealed ? try openWallet(arguments, .appending) : nil
        guard let envelope = try readEnvelope(path, what: "transfer", wallet: opened) else { return .verification }
        if opened == nil { opened = try openWallet(arguments, .appending) }
        guard let wallet = opened else { preconditionFailure("the wallet was opened above") }
        let transfer: SignedTransfer
        let outcome: StatementOutcome
        do {
            (transfer, outcome) = try wallet.accept(
                envelope, policy: TransferPolicy(acceptsWithoutProximity: arguments.flag("no-proximity")))
        } catch let error as FormatError {
            printError("secure: \(path) does not hold a transfer: \(error.message); nothing was recorded")
            return .verification
        } catch let error as KeyEventError {
            printError("secure: \(path): \(error.message); nothing was recorded")
            return .verification
        }
        let (message, code) = describe(outcome, what: "transfer")
        (code == .success ? { print($0) } : printError)(message)
        for evidence in wallet.lastEvidence {
            printError(
                "secure: WARNING: this payer signed two histories that cannot both be true (\(evidence.verify())); "
                    + "the fork evidence is kept: `secure evidence export --out DIR`")
        }
        if case .refused(_, _, let refusal?) = outcome, let out = arguments.value("refusal-out") {
            try writeOutput(Envelope(refusal, payeeLog: wallet.keyLog).encoded, to: out)
            printError(
                "secure: the signed refusal is in \(out); give it to the payer, whose `secure reverse` credits the debit back"
            )
        }
        if let out = arguments.value("receipt-out") {
            switch outcome {
            case .recorded(let entry), .duplicate(let entry):
                let receipt = try wallet.receipt(for: transfer, creditPosition: entry.position)
                try writeOutput(Envelope(receipt, payeeLog: wallet.keyLog).encoded, to: out)
                printError("secure: the countersigned receipt is in \(out); give it to the payer (`secure confirm`)")
            default: break
            }
        }
        return code
    }

    static func reverse(_ words: [String]) throws -> ExitCode {
        guard case (let wallet, let envelope)? = try payeeSigned(words, "refusal") else { return .verification }
        guard let (refusal, payeeLog) = try opened(envelope, { try $0.refusal() }) else { return .verification }
        let (message, code) = describe(try wallet.applyRefusal(refusal, payeeLog: payeeLog), what: "refusal")
        (code == .success ? { print($0) } : printError)(message)
        return code
    }

    static func confirm(_ words: [String]) throws -> ExitCode {
        guard case (let wallet, let envelope)? = try payeeSigned(words, "receipt") else { return .verification }
        guard let (receipt, payeeLog) = try opened(envelope, { try $0.receipt() }) else { return .verification }
        switch try wallet.confirm(receipt, payeeLog: payeeLog) {
        case .duplicate:
            print("payment \(receipt.payload.transferID.hex) was already confirmed by this receipt; nothing changed")
            return .success
        case .conflict(let entry):
            printError(
                "secure: the payee signed a refusal and a receipt of payment \(receipt.payload.transferID.hex); "
                    + "both are kept as evidence (entry \(entry.position)), and the payment stays as it was")
            return .refused
        default:
            print(
                "payment \(receipt.payload.transferID.hex) confirmed by the payee's receipt; it can no longer be reversed"
            )
            return .success
        }
    }

    /// For `reverse` and `confirm`: the wallet, opened to append, and the one FILE, an envelope holding a
    /// `what` the payee signed with the payee's key-event log; nil, with the reason on stderr, when FILE is
    /// not one. No key is taken from the command line: the log in the envelope, checked against the payee
    /// the transfer names, decides.
    private static func payeeSigned(_ words: [String], _ what: String) throws -> (Wallet, Envelope)? {
        let arguments = try Arguments(words, options: walletOptions, flags: appendingFlags)
        let path = try arguments.positionals(1, "one \(what) FILE")[0]
        guard let envelope = try readEnvelope(path, what: what) else { return nil }
        return (try openWallet(arguments, .appending), envelope)
    }

    /// The statement and log inside an envelope, or nil with the reason on stderr.
    private static func opened<Statement>(
        _ envelope: Envelope, _ open: (Envelope) throws -> (Statement, KeyEventLog)
    ) throws -> (Statement, KeyEventLog)? {
        do {
            return try open(envelope)
        } catch let error as FormatError {
            printError("secure: \(error.message); nothing was recorded")
        } catch let error as KeyEventError {
            printError("secure: \(error.message); nothing was recorded")
        }
        return nil
    }

    static func pending(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["export", "out"]), flags: walletFlags.union(jsonFlag))
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .reading)
        if let id = arguments.value("export") {
            // A debited payment whose file was lost (or never written: a full disk) is written again,
            // unchanged: the same signed transfer, with the payer's log and consistency proofs.
            let out = try arguments.required("out")
            let matches = try wallet.pendingTransfers().filter {
                $0.transfer.payload.order.transferID.hex.hasPrefix(id.lowercased())
            }
            guard matches.count == 1 else {
                throw UsageError(
                    matches.isEmpty
                        ? "no unconfirmed payment with id \(id); `secure pending` lists them"
                        : "\(id) names \(matches.count) payments; give more of the id")
            }
            try writeOutput(try wallet.envelope(ofSent: matches[0].transfer).encoded, to: out)
            print("payment \(matches[0].transfer.payload.order.transferID.hex) written to \(out)")
            return .success
        }
        let pending = try wallet.pendingTransfers()
        // The text line names the issuer as people compare it; JSON carries the whole id.
        let amountTexts = Dictionary(
            pending.map {
                ($0.transfer.payload.order.transferID.hex, MoneyText.format($0.transfer.payload.order.amount))
            }
        ) { first, _ in first }
        let rows = pending.map { item -> [String: Any] in
            let order = item.transfer.payload.order
            return [
                "transferID": order.transferID.hex, "amount": JSONOutput.amount(order.amount),
                "payee": order.payeeWalletID.hex, "position": item.entry.position,
            ]
        }
        printRows(
            rows, json: arguments.flag("json") ? (JSONOutput.document(.pending, [:]), "payments") : nil,
            whenEmpty: { print("no unconfirmed payments") },
            line: { row in
                let id = row["transferID"] as? String ?? ""
                return "\(id)  \(amountTexts[id] ?? "")  to \(row["payee"]!)  (entry \(row["position"]!))"
            })
        return .success
    }
}
