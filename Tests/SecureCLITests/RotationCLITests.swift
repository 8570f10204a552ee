import Foundation
import SecureTestSupport
import Testing

/// `keys rotate`, `keys audit` and audit bundles end to end with the real binary, checked by an
/// independent Python verifier (scripts/oracles/verify_bundle.py, `cryptography` only).
@Suite("secure keys rotate, keys audit, audit bundles", .serialized)
struct RotationCLITests {
    typealias World = WalletCLITests.World

    static var python: String { Run.projectRoot + "/.venv/bin/python" }
    static var oracle: String { Run.projectRoot + "/scripts/oracles/verify_bundle.py" }

    static func fund(_ world: World) throws { try world.fund("alice", "50.00 EUR") }

    @Test func rotateThenSpendAcceptAuditAndBundle() throws {
        let world = try World()
        try Self.fund(world)
        let rotate = try world.run(
            ["keys", "rotate", "--backup-pin-source", "file:toks/alice-bk.pin", "--json"] + world.wallet("alice"))
        #expect(rotate.status == 0, "\(rotate.stderr)")
        let rotated = try JSONSerialization.jsonObject(with: Data(rotate.stdout)) as? [String: Any]
        #expect(rotated?["sequence"] as? Int == 2)
        // The wallet card now shows the new key; bob pays alice and alice pays bob.
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "5.00 EUR", "--category", "food", "--out", "t1"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        let accept = try world.run(["accept", "t1", "--no-proximity", "--receipt-out", "r1"] + world.wallet("bob"))
        #expect(accept.status == 0, "\(accept.stderr)")
        #expect(try world.run(["confirm", "r1"] + world.wallet("alice")).status == 0)
        let back = try world.run(
            ["spend", "--to", "alice.card", "--amount", "1.00 EUR", "--category", "x", "--out", "t2"]
                + world.wallet("bob"))
        #expect(back.status == 0, "\(back.stderr)")
        let received = try world.run(["accept", "t2", "--no-proximity"] + world.wallet("alice"))
        #expect(received.status == 0, "\(received.stderr)")
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("46.00 EUR"))
        let verify = try world.run(["ledger", "verify"] + world.wallet("alice"))
        #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(verify.output) \(verify.stderr)")

        // The audit: every key passes, JSON stable between runs, documented fields present.
        let audit = try world.run(
            [
                "keys", "audit", "--json", "--backup-pin-source", "file:toks/alice-bk.pin",
                "--backup-token", "pkcs11:token=alice-bk?module-name=softhsm2",
            ] + world.wallet("alice"))
        #expect(audit.status == 0, "\(audit.stderr)")
        let again = try world.run(
            [
                "keys", "audit", "--json", "--backup-pin-source", "file:toks/alice-bk.pin",
                "--backup-token", "pkcs11:token=alice-bk?module-name=softhsm2",
            ] + world.wallet("alice"))
        #expect(again.output == audit.output, "the audit JSON is stable")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(audit.stdout)) as? [String: Any])
        #expect(Set(document.keys) == ["format", "walletID", "keySequence", "tokens", "keys"])
        #expect(document["format"] as? String == "secure-key-audit-v3")
        let tokens = try #require(document["tokens"] as? [[String: Any]])
        #expect(tokens.count == 2, "the wallet's token and the backup")
        for token in tokens {
            #expect(
                Set(token.keys) == [
                    "label", "manufacturer", "model", "serial", "firmwareVersion", "hardwareVersion", "piv",
                    "pinState", "pinTriesLeft", "severity", "findings",
                ])
        }
        let keys = try #require(document["keys"] as? [[String: Any]])
        #expect(keys.count == 6, "signing, two retired, next, two key-agreement keys")
        for key in keys {
            #expect(
                Set(key.keys) == [
                    "token", "label", "id", "fingerprint", "role", "inForce", "inKeyEventLog", "keySequence",
                    "origin", "pinPolicy", "touchPolicy", "severity", "findings", "attributes", "attestation",
                ])
            // SoftHSM: every wallet key passes; its origin is the module's word, at INFO.
            #expect(key["severity"] as? String == "info" && key["origin"] as? String == "module's word")
        }
        #expect(
            keys.map { $0["role"] as? String }.sorted { ($0 ?? "") < ($1 ?? "") }
                == ["agreement", "agreement", "next", "retired", "retired", "signing"])
        // keys list marks the key in force: after the rotation, the audit's signing key and no other.
        let list = try world.run(
            ["keys", "list", "--json", "--wallet", "alice", "--token", "pkcs11:token=alice?module-name=softhsm2"])
        let listing = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [String: Any])
        let listed = try #require(listing["keys"] as? [[String: Any]])
        let signing = try #require(keys.first { $0["role"] as? String == "signing" })
        #expect(
            listed.filter { $0["inForce"] as? Bool == true }.map { $0["fingerprint"] as? String }
                == [signing["fingerprint"] as? String], "\(list.output) \(list.stderr)")
        let text = try world.run(["keys", "audit"] + world.wallet("alice"))
        #expect(
            text.status == 0 && text.output.split(separator: "\n").count == 4,
            "one line for the token, then one per key on the wallet's token")

        // The bundle, whole and for a range across the rotation, verified by us and by the Python oracle.
        for (name, range) in [("all", [String]()), ("part", ["--from", "1", "--to", "6"])] {
            let export = try world.run(["audit", "export", "--out", "\(name).json"] + range + world.wallet("alice"))
            #expect(export.status == 0, "\(export.stderr)")
            let check = try world.run(["audit", "verify", "\(name).json"])
            #expect(check.status == 0 && check.output.contains("audit bundle OK"), "\(check.stderr)")
            let oracle = try Run.program(Self.python, [Self.oracle, world.directory + "/\(name).json"])
            #expect(oracle.status == 0 && oracle.output.hasPrefix("OK"), "\(oracle.output) \(oracle.stderr)")
        }
        // A tampered bundle fails both verifiers.
        let path = world.directory + "/all.json"
        var bundle = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        var entries = try #require(bundle["entries"] as? [[String: Any]])
        var entry = entries[3]
        var hex = Array(try #require(entry["entry"] as? String))
        hex[40] = hex[40] == "0" ? "1" : "0"
        entry["entry"] = String(hex)
        entries[3] = entry
        bundle["entries"] = entries
        try JSONSerialization.data(withJSONObject: bundle).write(
            to: URL(fileURLWithPath: world.directory + "/bad.json"))
        #expect(try world.run(["audit", "verify", "bad.json"]).status == 7)
        #expect(try Run.program(Self.python, [Self.oracle, world.directory + "/bad.json"]).status == 1)
    }

    static let softHSM = "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so"

    /// The CKA_IDs of the private keys on a world's token, as pkcs11-tool (OpenSC, a PKCS#11 client
    /// independent of the wallet) lists them after logging in. The slot is found by the exact label:
    /// pkcs11-tool's --token-label also matches a longer label that starts with it ("alice-bk").
    static func privateKeyIDs(_ world: World, token: String) throws -> Set<String> {
        func tool(_ arguments: [String]) throws -> [Substring] {
            let result = try Run.program(
                "/usr/bin/pkcs11-tool", ["--module", softHSM] + arguments,
                environment: world.environment, directory: world.directory)
            guard result.status == 0 else { throw CLITests.CLIFailure("pkcs11-tool \(arguments): \(result.stderr)") }
            return result.output.split(separator: "\n")
        }
        var slot: String?, slots: [String: String] = [:]
        for line in try tool(["--list-token-slots"]) {
            if line.hasPrefix("Slot "), let open = line.firstIndex(of: "("), let close = line.firstIndex(of: ")") {
                slot = String(line[line.index(after: open)..<close])
            } else if line.contains("token label"), let slot, let colon = line.firstIndex(of: ":") {
                slots[line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)] = slot
            }
        }
        guard let id = slots[token] else { throw CLITests.CLIFailure("no token labelled \(token) in \(slots)") }
        let pin = try String(contentsOfFile: world.directory + "/toks/\(token).pin", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let listing = try tool(["--slot", id, "--login", "--pin", pin, "--list-objects", "--type", "privkey"])
        return Set(
            listing.compactMap { line -> String? in
                let words = line.split(separator: " ")
                return words.first == "ID:" && words.count == 2 ? String(words[1]) : nil
            })
    }

    @Test func destroyOldNeedsConfirmation() throws {
        let world = try World()
        let tokens = ["alice", "alice-bk"]
        func keys() throws -> Set<String> {
            try tokens.reduce(into: Set<String>()) { all, token in
                all.formUnion(try Self.privateKeyIDs(world, token: token).map { "\(token)/\($0)" })
            }
        }
        let before = try keys()
        #expect(before.count >= 2, "the wallet's keys are on its tokens: \(before)")
        let refused = try Run.program(
            Run.secure,
            ["keys", "rotate", "--destroy-old", "--backup-pin-source", "file:toks/alice-bk.pin"]
                + world.wallet("alice"), environment: world.environment.merging(["TERM": "dumb"]) { $1 },
            directory: world.directory)
        #expect(refused.status == 2 && refused.stderr.contains("confirmation"), "\(refused.stderr)")
        #expect(try keys() == before, "a refused --destroy-old touches no key")
        let done = try world.run(
            ["keys", "rotate", "--destroy-old", "--yes", "--json", "--backup-pin-source", "file:toks/alice-bk.pin"]
                + world.wallet("alice"))
        #expect(done.status == 0, "\(done.stderr)")
        let result = try JSONSerialization.jsonObject(with: Data(done.stdout)) as? [String: Any]
        // The token's own listing, not the command's count, says what is gone.
        let after = try keys()
        let gone = before.subtracting(after)
        #expect(gone.count == 2, "the retired keys are gone from the tokens: \(gone)")
        #expect(result?["destroyed"] as? Int == gone.count)
        #expect(!after.isEmpty && after.count + gone.count > before.count, "the new keys are there: \(after)")
        // The wallet still signs and verifies with the keys that are left.
        #expect(try world.run(["ledger", "verify"] + world.wallet("alice")).status == 0)
        #expect(try world.run(["budget", "set", "food", "10.00 EUR"] + world.wallet("alice")).status == 0)
    }
}
