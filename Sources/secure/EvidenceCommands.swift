import Foundation
import SecureCore
import SecureCrypto

enum EvidenceCommands {
    static let help = """
        Usage: secure evidence verify FILE
          Checks fork evidence offline: (a) two checkpoints of one wallet key with equal size and different
          roots or heads, or (b) two checkpoints and one leaf index below both sizes with inclusion proofs of
          two different leaves. Exit code 0 when the evidence proves a fork, 7 when it does not.
        """

    static func run(_ words: [String]) throws -> ExitCode {
        guard words.first == "verify", !words.contains("--help") else {
            print(help)
            return words.isEmpty || words.contains("--help") ? (words.isEmpty ? .usage : .success) : .usage
        }
        let arguments = try Arguments(Array(words.dropFirst()), options: [], flags: [])
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
