import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureToken
import SecureWallet

/// A wallet named on the command line: 64 hex digits of wallet id, or a wallet card file written by
/// `secure wallet show --card` (a "Wallet-ID: HEX" line and the public key PEM).
func parseWalletReference(_ text: String) throws -> WalletID {
    if let id = WalletID(hex: text) { return id }
    guard let data = FileManager.default.contents(atPath: text) else {
        throw UsageError("\"\(text)\" is neither a 64-digit wallet id nor a readable wallet card file")
    }
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix("Wallet-ID:") {
        let hex = line.dropFirst("Wallet-ID:".count).trimmingCharacters(in: .whitespaces)
        if let id = WalletID(hex: hex) { return id }
    }
    throw UsageError("\(text) has no \"Wallet-ID: <64 hex digits>\" line; make one with `secure wallet show --card`")
}

/// Writes bytes to --out, durably, or refuses to overwrite.
func writeOutput(_ bytes: [UInt8], to path: String) throws {
    guard !FileManager.default.fileExists(atPath: path) else {
        throw UsageError("\(path) exists; it is never overwritten (a voucher or transfer file is money)")
    }
    try DurableFile.write(bytes, to: path, mode: 0o600)
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
    case .refused(let reason, let entry, _):
        return ("\(what) refused (\(reason)); recorded as entry \(entry.position)", .refused)
    case .policyRefusal(let reason):
        let advice: String
        switch reason {
        case .untrustedIssuer: advice = "the issuer is not trusted; `secure issuer trust PEM` first"
        case .proximityRequired, .proximityUnverified:
            advice = "it carries no proximity proof you verified; accept it with --no-proximity if you meant to"
        case .channelBindingMismatch: advice = "it was made for another session"
        }
        return ("\(what) not accepted: \(advice). Nothing was recorded", .refused)
    case .dropped(let reason):
        return (
            "\(what) dropped: its signature does not hold (\(reason)); anyone could have made it. Nothing was recorded",
            .verification
        )
    }
}

enum MoneyCommands {
    static let help = """
        Usage:
          secure issuer init --token URI [--label L] [--pin-source SPEC]
              Makes an issuer key on a token; prints its URI. Export it with `secure keys export URI --pem`.
          secure issuer trust PEM [--wallet DIR]      trust an issuer's public key for deposits
          secure mint --issuer KEYURI --to WALLET --amount "50.00 EUR" --out FILE
              Signs a voucher for WALLET (a wallet id, or a card from `secure wallet show --card`).
          secure deposit FILE                         credit a voucher, once
          secure spend --to WALLET --amount A --category C [--note N] [--override-budget] --out FILE
              Budget check, PIN, sign, append: writes a signed transfer with no proximity proof.
          secure accept FILE [--no-proximity] [--receipt-out FILE] [--refusal-out FILE]
              Credit a transfer, idempotently; a transfer without a proximity proof needs --no-proximity.
          secure reverse REFUSAL_FILE --payee CARD    append the reversal a payee's signed refusal allows
          secure confirm RECEIPT_FILE --payee CARD    record the payee's countersigned receipt
          secure pending [--json]                     payments out without a receipt or reversal
        """

    static func issuerInit(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: sessionOptions.union(["token", "label"]), flags: sessionFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let session = try openSession(arguments, uri: try parseURI(try arguments.required("token"), arguments))
        defer { session.close() }
        let key = try session.generateKey(label: arguments.value("label") ?? "issuer", usage: .sign)
        print(key.uri)
        printError(
            "secure: made issuer key, fingerprint \(Hex.encode(key.publicKey.fingerprint)); "
                + "wallets trust it with `secure issuer trust` on its PEM (`secure keys export URI --pem`)")
        return .success
    }

    static func issuerTrust(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags)
        let path = try arguments.positionals(1, "one issuer PEM file")[0]
        let key = try P256.PublicKey(pem: String(decoding: try readFile(path, what: "the issuer key"), as: UTF8.self))
        let wallet = try openWallet(arguments, .appending)
        try wallet.trust(issuer: key)
        print("trusting issuer \(Hex.encode(key.fingerprint))")
        return .success
    }

    static func mint(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: sessionOptions.union(["issuer", "to", "amount", "out"]), flags: sessionFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let recipient = try parseWalletReference(try arguments.required("to"))
        let amount = try MoneyText.parse(try arguments.required("amount"))
        guard !amount.isZero else { throw UsageError("a voucher's amount must be positive") }
        let out = try arguments.required("out")
        let uri = try parseURI(try arguments.required("issuer"), arguments)
        let session = try openSession(arguments, uri: uri)
        defer { session.close() }
        let signer = try TokenSigner(session: session, keyURI: uri)
        let sequence = try IssuerSequence.next(for: signer.publicKey)
        let voucher = try Voucher(
            issuerKey: signer.publicKey, recipientWalletID: recipient, amount: amount,
            voucherID: .random(), issuerSequence: sequence
        ).sign(with: signer)
        try writeOutput(voucher.encoded, to: out)
        print("voucher #\(sequence) for \(MoneyText.format(amount)) to \(recipient.hex) written to \(out)")
        return .success
    }

    static func deposit(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags)
        let path = try arguments.positionals(1, "one voucher FILE")[0]
        let bytes = try readFile(path, what: "the voucher")
        guard let voucher = try? SignedVoucher.decode(bytes) else {
            printError("secure: \(path) is not a voucher (truncated or malformed); nothing was recorded")
            return .verification
        }
        let wallet = try openWallet(arguments, .appending)
        let (message, code) = describe(try wallet.deposit(voucher), what: "voucher")
        (code == .success ? { print($0) } : printError)(message)
        return code
    }

    static func spend(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["to", "amount", "category", "note", "out"]),
            flags: walletFlags.union(["override-budget"]))
        _ = try arguments.positionals(0, "no positional arguments")
        let payee = try parseWalletReference(try arguments.required("to"))
        let amount = try MoneyText.parse(try arguments.required("amount"))
        guard !amount.isZero else { throw UsageError("a payment's amount must be positive") }
        let category = try arguments.required("category")
        try Budget.validateCategory(category)
        let out = try arguments.required("out")
        guard !FileManager.default.fileExists(atPath: out) else {
            throw UsageError("\(out) exists; it is never overwritten")
        }
        let wallet = try openWallet(arguments, .appending)
        do {
            if case .alert(let usage) = try wallet.checkSpend(
                amount: amount, category: category, overrideBudget: arguments.flag("override-budget"))
            {
                printError(
                    "secure: budget alert: \(usage.category) will be above 80% of \(MoneyText.format(usage.limit)) this window"
                )
            }
            let transfer = try wallet.spend(
                to: payee, amount: amount, category: category, note: arguments.value("note") ?? "",
                overrideBudget: arguments.flag("override-budget"))
            try writeOutput(transfer.encoded, to: out)
            print(
                "paid \(MoneyText.format(amount)) to \(payee.hex) (\(category)); signed transfer in \(out). "
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
            flags: walletFlags.union(["no-proximity"]))
        let path = try arguments.positionals(1, "one transfer FILE")[0]
        guard let transfer = try? SignedTransfer.decode(try readFile(path, what: "the transfer")) else {
            printError("secure: \(path) is not a transfer (truncated or malformed); nothing was recorded")
            return .verification
        }
        let wallet = try openWallet(arguments, .appending)
        let outcome = try wallet.accept(
            transfer, policy: TransferPolicy(acceptsWithoutProximity: arguments.flag("no-proximity")))
        let (message, code) = describe(outcome, what: "transfer")
        (code == .success ? { print($0) } : printError)(message)
        for evidence in wallet.lastEvidence {
            printError(
                "secure: WARNING: this payer signed two histories that cannot both be true (\(evidence.verify())); "
                    + "the fork evidence is kept: `secure evidence export --out DIR`")
        }
        if case .refused(_, _, let refusal?) = outcome, let out = arguments.value("refusal-out") {
            try writeOutput(refusal.encoded, to: out)
            printError(
                "secure: the signed refusal is in \(out); give it to the payer, whose `secure reverse` credits the debit back"
            )
        }
        if let out = arguments.value("receipt-out") {
            switch outcome {
            case .recorded(let entry), .duplicate(let entry):
                let receipt = try wallet.receipt(for: transfer, creditPosition: entry.position)
                try writeOutput(receipt.encoded, to: out)
                printError("secure: the countersigned receipt is in \(out); give it to the payer (`secure confirm`)")
            default: break
            }
        }
        return code
    }

    static func reverse(_ words: [String]) throws -> ExitCode {
        try withPayeeSigned(
            words, "refusal", decode: { try SignedRefusal.decode($0) },
            then: { wallet, payeeKey, refusal in
                let (message, code) = describe(
                    try wallet.applyRefusal(refusal, payeeKeys: [payeeKey]), what: "refusal")
                (code == .success ? { print($0) } : printError)(message)
                return code
            })
    }

    static func confirm(_ words: [String]) throws -> ExitCode {
        try withPayeeSigned(
            words, "receipt", decode: { try SignedReceipt.decode($0) },
            then: { wallet, payeeKey, receipt in
                try wallet.confirm(receipt, payeeKeys: [payeeKey])
                print("payment \(receipt.payload.transferID.hex) confirmed by the payee's receipt")
                return .success
            })
    }

    /// For `reverse` and `confirm`: runs `then` on the wallet, opened to append, the payee's key (`--payee`, a
    /// card or a PEM key) and the one FILE, a `what` the payee signed; when FILE is not one, says so on stderr
    /// and exits `.verification` without opening the wallet.
    private static func withPayeeSigned<Document>(
        _ words: [String], _ what: String, decode: ([UInt8]) throws -> Document?,
        then body: (Wallet, P256.PublicKey, Document) throws -> ExitCode
    ) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions.union(["payee"]), flags: walletFlags)
        let path = try arguments.positionals(1, "one \(what) FILE")[0]
        let payeeKey = try P256.PublicKey(
            pem: String(
                decoding: try readFile(try arguments.required("payee"), what: "the payee's card or key"), as: UTF8.self)
        )
        guard let document = try? decode(try readFile(path, what: "the \(what)")) else {
            printError("secure: \(path) is not a \(what); nothing was recorded")
            return .verification
        }
        return try body(try openWallet(arguments, .appending), payeeKey, document)
    }

    static func pending(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .reading)
        let rows = try wallet.pendingTransfers().map { item -> [String: Any] in
            [
                "transferID": item.transfer.payload.order.transferID.hex,
                "amount": MoneyText.format(item.transfer.payload.order.amount),
                "payee": item.transfer.payload.order.payeeWalletID.hex, "position": item.entry.position,
            ]
        }
        printRows(
            rows, json: arguments.flag("json"), whenEmpty: { print("no unconfirmed payments") },
            line: { row in
                "\(row["transferID"]!)  \(row["amount"]!)  to \(row["payee"]!)  (entry \(row["position"]!))"
            })
        return .success
    }
}

/// Issuer sequence numbers, one counter per issuer key, kept in the state folder and written durably
/// before a voucher is signed, so no two vouchers share a number.
enum IssuerSequence {
    static func next(for key: P256.PublicKey) throws -> UInt64 {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state"
        let path = base + "/secure/issuers/\(Hex.encode(key.fingerprint)).sequence"
        let current =
            FileManager.default.contents(atPath: path).flatMap {
                UInt64(String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            } ?? 0
        let next = current + 1
        try DurableFile.write(Array("\(next)\n".utf8), to: path)
        return next
    }
}
