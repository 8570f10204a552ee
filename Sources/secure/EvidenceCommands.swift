import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecureSync

enum EvidenceCommands {
    static let help = """
        Usage: secure evidence export --out DIR     write the fork evidence this wallet holds, one file each
               secure evidence fetch DIGEST --out FILE [--issuer ID] [--clearing URL] [--insecure-loopback]
               secure evidence verify FILE
          fetch downloads the evidence behind a proven listing from the issuer's clearing (https, pinned to the
          TLS key the issuer's delegation names) and checks that it hashes to DIGEST; verify then checks it.
          Checks fork evidence (version 2) offline. It carries the accused wallet's key-event log: the log must
          hash to the wallet id the evidence names, and each signing key must be the one the log shows in force
          at the size it signed; then (1) two checkpoints of equal size with different roots or heads, (2) two
          checkpoints and one leaf index below both sizes with inclusion proofs of two different leaves, (3) two
          key events of one sequence, (4, 5) a retired key's later checkpoint or statement, or (6) a signed root
          that the wallet's own later history contradicts. Evidence version 1 (no log) is refused. Exit code 0
          when the evidence proves a fork, 7 when it does not.
        """

    static func export(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions.union(["out"]), flags: walletFlags)
        let out = try arguments.required("out")
        let wallet = try openWallet(arguments, .reading)
        let held = try wallet.ledger.evidence()
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        for bytes in held {
            let path = out + "/" + Hex.encode(SHA256.hash(bytes).prefix(8)) + ".evidence"
            if !FileManager.default.fileExists(atPath: path) { try writeOutput(bytes, to: path) }
            print(path)
        }
        if held.isEmpty { printError("secure: this wallet holds no fork evidence") }
        return .success
    }

    static func fetch(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["out", "issuer", "clearing"]),
            flags: walletFlags.union(["insecure-loopback"]))
        let text = try arguments.positionals(1, "one evidence DIGEST (64 hex digits)")[0]
        guard let digest = EvidenceDigest(hex: text.lowercased()) else {
            throw UsageError("\(text) is not an evidence digest (64 hex digits)")
        }
        let out = try arguments.required("out")
        var named: WalletID?
        if let issuer = arguments.value("issuer") {
            guard let id = WalletID(hex: issuer.lowercased()) else {
                throw UsageError("\(issuer) is not a wallet id (64 hex digits)")
            }
            named = id
        }
        let wallet = try openWallet(arguments, .reading)
        let delegation = try wallet.clearingDelegation(issuer: try wallet.clearingIssuer(named))
        let client = try ClearingClient(
            url: arguments.value("clearing") ?? delegation.url, tlsKeyDigest: delegation.tlsKeyDigest,
            insecureLoopback: arguments.flag("insecure-loopback"))
        try writeOutput(try client.evidence(digest), to: out)
        print(out)
        return .success
    }

    static func verify(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: [], flags: [])
        let path = try arguments.positionals(1, "one evidence FILE")[0]
        let bytes = try readFile(path, what: "the evidence")
        let decoded: ForkEvidence?
        do {
            decoded = try ForkEvidence.decode(bytes)
        } catch let error as FormatError {
            printError("secure: \(path) is not fork evidence this wallet can act on: \(error.message)")
            return .verification
        }
        guard let evidence = decoded else {
            printError("secure: \(path) is not fork evidence (truncated)")
            return .verification
        }
        let digest = EvidenceDigest(of: bytes).hex
        switch evidence.verify() {
        case .forkProven(let sentence):
            print("evidence OK: \(sentence) (wallet \(evidence.accused.hex), evidence \(digest))")
            return .success
        case .notProven(let reason, let sentence):
            printError(
                "secure: evidence does NOT prove a fork against wallet \(evidence.accused.hex) (\(reason.rawValue)): "
                    + "\(sentence)")
            return .verification
        }
    }
}
