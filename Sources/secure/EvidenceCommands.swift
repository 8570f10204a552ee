import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto

enum EvidenceCommands {
    static let help = """
        Usage: secure evidence export --out DIR     write the fork evidence this wallet holds, one file each
               secure evidence verify FILE
          Checks fork evidence offline: (a) two checkpoints of one wallet key with equal size and different
          roots or heads, or (b) two checkpoints and one leaf index below both sizes with inclusion proofs of
          two different leaves. Exit code 0 when the evidence proves a fork, 7 when it does not.
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

    static func verify(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: [], flags: [])
        let path = try arguments.positionals(1, "one evidence FILE")[0]
        let bytes = try readFile(path, what: "the evidence")
        guard let evidence = try? ForkEvidence.decode(bytes) else {
            printError("secure: \(path) is not fork evidence (truncated or malformed)")
            return .verification
        }
        let verdict = evidence.verify()
        if verdict.isProven {
            print("evidence OK: \(verdict)")
            return .success
        }
        printError("secure: evidence does NOT prove a fork: \(verdict)")
        return .verification
    }
}
