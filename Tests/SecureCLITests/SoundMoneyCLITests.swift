import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

/// The sound-money attacks of issue 12, in their real form: the stock `secure` binary on real SoftHSM tokens,
/// against files a hostile user writes with a software P-256 key (`SoftwareWallet`, the forger). Each attack
/// must be refused with a clear message, and leave every ledger as it was.
@Suite("Sound money: forged and misdirected statements", .serialized)
struct SoundMoneyCLITests {
    typealias World = WalletCLITests.World

    /// The world's issuer, trusted by every wallet of the world, mints `amount` to `name`, who deposits it.
    static func fund(_ world: World, _ name: String, _ amount: String) throws { try world.fund(name, amount) }

    static func card(_ world: World, _ name: String) throws -> WalletCard {
        try WalletCard.parse(try String(contentsOfFile: world.directory + "/\(name).card", encoding: .utf8))
    }

    static func write(_ bytes: [UInt8], _ world: World, _ file: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: world.directory + "/" + file))
    }

    static func read(_ world: World, _ file: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: world.directory + "/" + file)))
    }

    /// The wallet's entry count, from `wallet show`.
    static func entries(_ world: World, _ name: String) throws -> String {
        let show = try world.run(["wallet", "show"] + world.wallet(name)).output
        return show.split(separator: "\n").first { $0.hasPrefix("entries") }.map(String.init) ?? "?"
    }

    static func verifies(_ world: World, _ name: String) throws -> Bool {
        try world.run(["ledger", "verify"] + world.wallet(name)).output.contains("ledger OK")
    }

    /// Attack 1: a script with a fresh software key writes a transfer of 1,000,000.00 EUR that claims
    /// Alice's wallet id as its payer. Wrapped with Alice's real key-event log (from her card) the log does
    /// not show the script's key; wrapped with the script's own log, the log is not Alice's. Either way Bob
    /// records nothing, stores no checkpoint, and goes on crediting Alice's genuine payments.
    @Test func aTransferSignedByAKeyThatIsNotThePayersIsDropped() throws {
        let world = try World()
        try Self.fund(world, "alice", "50.00 EUR")
        let alice = try Self.card(world, "alice"), bob = try Self.card(world, "bob")
        var forger = try SoftwareWallet(seed: 1, claiming: alice.walletID)
        let million = try Money(minorUnits: 100_000_000, currency: .eur)
        try forger.fundFromNothing(million)
        let forged = try forger.pay(bob.walletID, amount: million)
        try Self.write(Envelope(forged, payerLog: alice.log).encoded, world, "forged-with-alices-log")
        try Self.write(Envelope(forged, payerLog: forger.log).encoded, world, "forged-with-own-log")
        let before = try Self.entries(world, "bob")
        let withAlicesLog = try world.run(["accept", "forged-with-alices-log", "--no-proximity"] + world.wallet("bob"))
        #expect(withAlicesLog.status == 7, "\(withAlicesLog.stderr)")
        #expect(withAlicesLog.stderr.contains("dropped") && withAlicesLog.stderr.contains("key-event log"))
        let withOwnLog = try world.run(["accept", "forged-with-own-log", "--no-proximity"] + world.wallet("bob"))
        #expect(withOwnLog.status == 7, "\(withOwnLog.stderr)")
        #expect(withOwnLog.stderr.contains("not the payer"), "\(withOwnLog.stderr)")
        #expect(try Self.entries(world, "bob") == before, "a dropped transfer records nothing")
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("no money yet"))
        // Alice's genuine payment is still credited: no forged checkpoint was kept against her.
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "5.00 EUR", "--category", "x", "--out", "t1"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        let accept = try world.run(["accept", "t1", "--no-proximity"] + world.wallet("bob"))
        #expect(accept.status == 0, "\(accept.stderr)")
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("5.00 EUR"))
        #expect(try Self.verifies(world, "alice") && Self.verifies(world, "bob"))
    }

    /// Attack 2: Alice trusts an issuer she made herself, deposits 1,000,000.00 EUR of it and pays Bob, who
    /// never trusted that issuer. By file Bob's wallet refuses by policy (nothing recorded, nothing signed);
    /// in a session Bob's wallet answers `untrustedAsset` before `ready`, so Alice's wallet debits nothing.
    /// Once Bob trusts the issuer, the same file is credited.
    @Test func moneyOfAnIssuerThePayeeNeverTrustedIsRefused() throws {
        let world = try World()
        try world.fund("alice", "1000000.00 EUR", trustedBy: ["alice"])
        let balance = try world.run(["balance"] + world.wallet("alice")).output
        #expect(balance.contains("1000000.00 EUR") && balance.contains("issued by"), "\(balance)")
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "999999.00 EUR", "--category", "x", "--out", "t"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        let before = try Self.entries(world, "bob")
        let refused = try world.run(["accept", "t", "--no-proximity"] + world.wallet("bob"))
        #expect(refused.status == 11 && refused.stderr.contains("does not trust"), "\(refused.stderr)")
        #expect(try Self.entries(world, "bob") == before)
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("no money yet"))
        #expect(try Self.verifies(world, "bob"))

        let (receiver, payer) = try PeerCLITests.session(
            world, receiver: ["--allow-simulated-ranging", "--distance", "420"],
            payer: [
                "--amount", "1.00 EUR", "--category", "x", "--allow-simulated-ranging", "--distance", "400",
            ])
        #expect(receiver.status != 0 && payer.status != 0, "\(payer.stderr)")
        let said = receiver.output + receiver.stderr + payer.output + payer.stderr
        #expect(said.contains("untrustedAsset"), "\(said)")
        let after = try world.run(["balance"] + world.wallet("alice")).output
        #expect(after.contains("1.00 EUR") && !after.contains("0.00 EUR"), "\(after)")
        #expect(try world.run(["pending"] + world.wallet("alice")).output.contains(Self.shortPending))

        #expect(try world.run(["issuer", "trust", "issuer.card"] + world.wallet("bob")).status == 0)
        // 999,999.00 EUR is far past the default offline limit of 150.00 a day: Bob raises his.
        #expect(
            try world.run(["policy", "set", "--offline-limit", "1000000.00 EUR"] + world.wallet("bob")).status == 0)
        let accepted = try world.run(["accept", "t", "--no-proximity"] + world.wallet("bob"))
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("999999.00 EUR"))
        #expect(try Self.verifies(world, "bob") && Self.verifies(world, "alice"))
    }

    /// Wallets made before assets (wallet.json format 1, plain currency amounts in signed history) are refused
    /// with exit 10 and the reason, by reading and appending commands alike; nothing is migrated.
    @Test func aWalletMadeBeforeAssetsIsRefusedNotMigrated() throws {
        let world = try World(wallets: ["alice"])
        let path = world.directory + "/alice/wallet.json"
        let json = try String(contentsOfFile: path, encoding: .utf8)
        let old = json.replacingOccurrences(of: "\"format\" : 2", with: "\"format\" : 1")
            .replacingOccurrences(of: "\"format\":2", with: "\"format\":1")
        #expect(old != json, "wallet.json names its format")
        try old.write(toFile: path, atomically: true, encoding: .utf8)
        for command in [["balance"], ["budget", "set", "food", "1.00 EUR"]] {
            let result = try world.run(command + world.wallet("alice"))
            #expect(
                result.status == 10 && result.stderr.contains("before money was counted per issuer"),
                "\(command): \(result.stderr)")
        }
    }

    /// The one pending payment of the test above: the file transfer, not a session debit.
    static let shortPending = "999999.00 EUR"

    /// Attack 3: Alice pays Bob. Carol, given the same file, neither credits nor refuses it, and signs
    /// nothing. A refusal of the transfer signed by a software key, wrapped with Bob's real log or with its
    /// own, reverses nothing; `reverse` takes no key from the command line. Bob's receipt confirms the
    /// payment for good.
    @Test func onlyThePayeeCanRefuseAndABystanderSignsNothing() throws {
        let world = try World(wallets: ["alice", "bob", "carol"])
        try Self.fund(world, "alice", "50.00 EUR")
        let bob = try Self.card(world, "bob")
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "7.00 EUR", "--category", "x", "--out", "t1"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        let carolBefore = try Self.entries(world, "carol")
        let carol = try world.run(
            ["accept", "t1", "--no-proximity", "--refusal-out", "carol-refusal"] + world.wallet("carol"))
        #expect(carol.status == 11 && carol.stderr.contains("not addressed to this wallet"), "\(carol.stderr)")
        #expect(
            !FileManager.default.fileExists(atPath: world.directory + "/carol-refusal"), "a bystander signs nothing")
        #expect(try Self.entries(world, "carol") == carolBefore)
        let accept = try world.run(["accept", "t1", "--no-proximity", "--receipt-out", "r1"] + world.wallet("bob"))
        #expect(accept.status == 0, "\(accept.stderr)")

        let envelope = try #require(try Envelope.decode(try Self.read(world, "t1")))
        let (transfer, _) = try envelope.transfer()
        let forger = try SoftwareWallet(seed: 2)
        let refusal = try forger.refusal(of: transfer, reason: .debitMismatch)
        try Self.write(Envelope(refusal, payeeLog: bob.log).encoded, world, "refusal-with-bobs-log")
        try Self.write(Envelope(refusal, payeeLog: forger.log).encoded, world, "refusal-with-own-log")
        let withBobsLog = try world.run(["reverse", "refusal-with-bobs-log"] + world.wallet("alice"))
        #expect(withBobsLog.status == 7 && withBobsLog.stderr.contains("dropped"), "\(withBobsLog.stderr)")
        let withOwnLog = try world.run(["reverse", "refusal-with-own-log"] + world.wallet("alice"))
        #expect(withOwnLog.status == 7 && withOwnLog.stderr.contains("not the payee"), "\(withOwnLog.stderr)")
        let withKey = try world.run(
            ["reverse", "refusal-with-bobs-log", "--payee", "bob.card"] + world.wallet("alice"))
        #expect(withKey.status == 2, "no key is taken from the command line: \(withKey.stderr)")
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("43.00 EUR"))
        #expect(
            try world.run(["pending"] + world.wallet("alice")).output.contains(transfer.payload.order.transferID.hex))
        let confirm = try world.run(["confirm", "r1"] + world.wallet("alice"))
        #expect(confirm.status == 0 && confirm.output.contains("can no longer be reversed"), "\(confirm.output)")
        let again = try world.run(["confirm", "r1"] + world.wallet("alice"))
        #expect(again.status == 0 && again.output.contains("already confirmed"), "\(again.output)")
        #expect(try world.run(["pending"] + world.wallet("alice")).output.contains("no unconfirmed"))
        #expect(try Self.verifies(world, "alice") && Self.verifies(world, "bob") && Self.verifies(world, "carol"))
    }

    /// Attack 7: a transfer whose checkpoint claims more than 2^63 − 1 entries (size UInt64.max, with an
    /// inclusion proof built to fit it) made `accept` trap converting the size for SQLite. It must end in
    /// a clear error with nothing recorded.
    @Test func aCheckpointSizePastInt64MaxIsAnErrorNotATrap() throws {
        let world = try World()
        let bob = try Self.card(world, "bob")
        var forger = try SoftwareWallet(seed: 3)
        let amount = try Money(minorUnits: 100, currency: .eur)
        try forger.fundFromNothing(amount)
        let order = try forger.order(to: bob.walletID, amount: amount)
        let size = UInt64.max
        let leaf = try order.debitDraft(category: "").entry(
            position: size - 1, id: .random(), time: forger.time + 1000, previousLink: .random())
        let leafHash = Merkle.leafHash(leaf.encoded)
        var proof: [Digest32] = []
        var root: Digest32?
        while root == nil, proof.count < 64 {
            proof.append(.random())
            root = Merkle.rootFromInclusionProof(leafHash: leafHash, index: size - 1, size: size, proof: proof)
        }
        let checkpoint = try Checkpoint(
            walletID: forger.walletID, walletKey: forger.key, keySequence: 0, keyEventPosition: 0, size: size,
            root: try #require(root), head: leaf.link, time: forger.time + 1000,
            snapshot: LedgerSnapshot(forger.state), index: LedgerIndex.emptyDigest
        ).sign(with: forger.signer)
        let transfer = try Transfer(
            order: order, checkpoint: checkpoint, debitLeaf: leaf.encoded, inclusionProof: proof
        )
        .sign(with: forger.signer)
        try Self.write(Envelope(transfer, payerLog: forger.log).encoded, world, "huge")
        let before = try Self.entries(world, "bob")
        let accept = try world.run(["accept", "huge", "--no-proximity"] + world.wallet("bob"))
        #expect(accept.status != 0 && accept.status < 128, "exit \(accept.status): \(accept.stderr)")
        #expect(!accept.stderr.isEmpty && !accept.stderr.contains("Fatal error"), "\(accept.stderr)")
        #expect(try Self.entries(world, "bob") == before)
        #expect(try Self.verifies(world, "bob"))
    }
}

extension SoundMoneyCLITests {
    /// Attack 5: a wallet made with the token anchor is restored from a copy and `wallet.json` is edited to
    /// name a file anchor. The token still holds the wallet's anchor, and it decides: the restored ledger is
    /// behind it, so the wallet opens locked, `ledger repair` writes no file anchor for it, and it refuses to
    /// spend.
    @Test func editingWalletJSONToAFileAnchorDoesNotHideTheTokenAnchor() throws {
        let world = try World()
        try Self.fund(world, "alice", "50.00 EUR")
        let folder = world.directory + "/alice", copy = world.directory + "/alice-copy"
        try FileManager.default.copyItem(atPath: folder, toPath: copy)
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "40.00 EUR", "--category", "x", "--out", "t1"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        try FileManager.default.removeItem(atPath: folder)
        try FileManager.default.moveItem(atPath: copy, toPath: folder)
        let metadataPath = folder + "/wallet.json"
        let metadata = try String(contentsOfFile: metadataPath, encoding: .utf8)
        #expect(metadata.contains("\"token\""))
        try metadata.replacingOccurrences(of: "\"anchor\":\"token\"", with: "\"anchor\":\"file\"")
            .replacingOccurrences(of: "\"anchor\" : \"token\"", with: "\"anchor\" : \"file\"")
            .write(toFile: metadataPath, atomically: true, encoding: .utf8)
        #expect(try String(contentsOfFile: metadataPath, encoding: .utf8).contains("file"), "the edit took")
        // The owner's next step: have `ledger repair` write the restored ledger's checkpoint as the file anchor.
        _ = try world.run(["ledger", "repair"] + world.wallet("alice"))
        let verify = try world.run(["ledger", "verify"] + world.wallet("alice"))
        #expect(verify.status != 0 && !verify.output.contains("ledger OK"), "\(verify.output) \(verify.stderr)")
        let again = try world.run(
            ["spend", "--to", "bob.card", "--amount", "40.00 EUR", "--category", "x", "--out", "t2"]
                + world.wallet("alice"))
        #expect(again.status == 10, "exit \(again.status): \(again.stderr)")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/t2"))
        #expect(try world.run(["wallet", "show"] + world.wallet("alice")).output.contains("anchor       token"))
    }
}

extension SoundMoneyCLITests {
    /// Attack 4: Alice copies her wallet folder, pays Carol 40.00 by file, restores the copy, accepts the
    /// rollback, and pays Carol 40.00 again. The second envelope proves no link from the checkpoint Carol
    /// holds, so Carol refuses it (nothing signed, nothing credited) and keeps both checkpoints for the
    /// clearing; paying the same size again instead leaves proven fork evidence.
    @Test func aRestoredPayerPayingTheSamePayeeAgainByFileIsRefused() throws {
        let world = try World(wallets: ["alice", "carol"])
        try Self.fund(world, "alice", "100.00 EUR")
        let folder = world.directory + "/alice", copy = world.directory + "/alice-copy"
        try FileManager.default.copyItem(atPath: folder, toPath: copy)
        func pay(_ out: String) throws -> ProcessResult {
            try world.run(
                ["spend", "--to", "carol.card", "--amount", "40.00 EUR", "--category", "x", "--out", out]
                    + world.wallet("alice"))
        }
        #expect(try pay("t1").status == 0)
        #expect(try world.run(["accept", "t1", "--no-proximity"] + world.wallet("carol")).status == 0)
        try FileManager.default.removeItem(atPath: folder)
        try FileManager.default.moveItem(atPath: copy, toPath: folder)
        let rollback = try world.run(["ledger", "verify", "--accept-rollback"] + world.wallet("alice"))
        #expect(rollback.status == 0, "\(rollback.output) \(rollback.stderr)")
        let second = try pay("t2")
        #expect(second.status == 0, "the restored wallet spends its restored money: \(second.stderr)")
        let before = try Self.entries(world, "carol")
        let accept = try world.run(["accept", "t2", "--no-proximity"] + world.wallet("carol"))
        #expect(accept.status == 11, "exit \(accept.status): \(accept.stderr)")
        #expect(accept.stderr.contains("nothing proves it extends"), "\(accept.stderr)")
        #expect(try Self.entries(world, "carol") == before)
        #expect(try world.run(["balance"] + world.wallet("carol")).output.contains("40.00 EUR"))
        // The same answer every time the file is offered again.
        #expect(try world.run(["accept", "t2", "--no-proximity"] + world.wallet("carol")).status == 11)
        #expect(try Self.verifies(world, "carol"))
    }
}

extension SoundMoneyCLITests {
    /// Attack 4 at one size: Alice copies her wallet, sets a budget (one entry) and pays Carol; restored and
    /// past `--accept-rollback` (one entry), she pays Carol again from a ledger of the same size. Carol refuses
    /// it as forked and keeps evidence v2 (with Alice's key-event log); Alice's next payment is refused with the
    /// digest of the evidence that bars her, which `evidence export` and `evidence verify` prove offline, and
    /// Carol's ledger, bans included, still verifies.
    @Test func aRestoredPayerAtTheSameSizeIsBarredAndTheRefusalNamesTheEvidence() throws {
        let world = try World(wallets: ["alice", "carol"])
        try Self.fund(world, "alice", "100.00 EUR")
        let folder = world.directory + "/alice", copy = world.directory + "/alice-copy"
        try FileManager.default.copyItem(atPath: folder, toPath: copy)
        func pay(_ amount: String, _ out: String) throws -> ProcessResult {
            try world.run(
                ["spend", "--to", "carol.card", "--amount", amount, "--category", "x", "--out", out]
                    + world.wallet("alice"))
        }
        func accept(_ file: String) throws -> ProcessResult {
            try world.run(["accept", file, "--no-proximity"] + world.wallet("carol"))
        }
        #expect(try world.run(["budget", "set", "food", "50.00 EUR"] + world.wallet("alice")).status == 0)
        #expect(try pay("40.00 EUR", "t1").status == 0)
        #expect(try accept("t1").status == 0)
        try FileManager.default.removeItem(atPath: folder)
        try FileManager.default.moveItem(atPath: copy, toPath: folder)
        #expect(try world.run(["ledger", "verify", "--accept-rollback"] + world.wallet("alice")).status == 0)
        #expect(try pay("40.00 EUR", "t2").status == 0)
        let forked = try accept("t2")
        #expect(forked.status == 11 && forked.stderr.contains("contradicts"), "exit \(forked.status): \(forked.stderr)")
        #expect(try pay("5.00 EUR", "t3").status == 0)
        let barred = try accept("t3")
        #expect(barred.status == 11 && barred.stderr.contains("signed two histories"), "\(barred.stderr)")
        let export = try world.run(["evidence", "export", "--out", "held"] + world.wallet("carol"))
        let files = export.output.split(separator: "\n").map(String.init)
        #expect(export.status == 0 && !files.isEmpty, "\(export.stderr)")
        var digests: [String] = []
        for file in files {
            let verify = try world.run(["evidence", "verify", file])
            #expect(verify.status == 0 && verify.output.contains("evidence OK"), "\(file): \(verify.stderr)")
            if let range = verify.output.range(of: "evidence ", options: .backwards) {
                digests.append(String(verify.output[range.upperBound...].prefix(64)))
            }
        }
        #expect(
            digests.contains { barred.stderr.contains("evidence \($0)") },
            "the refusal names the evidence: \(barred.stderr) / \(digests)")
        #expect(try Self.verifies(world, "carol"))
    }

    /// Found by the attack on the first fixes (F-D, F-E): hostile offline files that trapped `evidence verify`
    /// (type 4 evidence whose retired event has sequence 2^64 − 1) and `audit verify` (a bundle whose "from"
    /// is 2^64 − 1). Both must be clear refusals.
    @Test func hostileEvidenceAndBundlesAreRefusedWithoutATrap() throws {
        let world = try World(wallets: ["alice"])
        // The attack's file is evidence version 1, which is refused as such; its body in version 2, with
        // Alice's real log, proves nothing either, without a trap.
        let versionOne = Array(Hex.decode(Self.sequenceMaxEvidenceHex)!)
        try Self.write(versionOne, world, "evidence-v1")
        let refused = try world.run(["evidence", "verify", "evidence-v1"])
        #expect(
            refused.status == 7 && refused.stderr.contains("version 1"), "exit \(refused.status): \(refused.stderr)")
        let log = Array(try Self.card(world, "alice").encoded.dropFirst(33))
        try Self.write([2, 4] + log + Array(versionOne.dropFirst(2)), world, "evidence")
        let evidence = try world.run(["evidence", "verify", "evidence"])
        #expect(
            evidence.status == 7 && !evidence.stderr.contains("Fatal")
                // Its checkpoint is version 1 since checkpoints count assets; either way it proves nothing.
                && (evidence.stderr.contains("wrong-log") || evidence.stderr.contains("checkpoint version 1")),
            "exit \(evidence.status): \(evidence.stderr)")
        let export = try world.run(["audit", "export", "--out", "bundle.json"] + world.wallet("alice"))
        #expect(export.status == 0, "\(export.stderr)")
        let path = world.directory + "/bundle.json"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let hostile = text.replacingOccurrences(
            of: #""from"\s*:\s*0"#, with: "\"from\": 18446744073709551615", options: .regularExpression)
        #expect(hostile != text, "the bundle names its first entry")
        try hostile.write(toFile: path, atomically: true, encoding: .utf8)
        let verify = try world.run(["audit", "verify", "bundle.json"])
        #expect(verify.status != 0 && verify.status < 128, "exit \(verify.status): \(verify.stderr)")
    }

    /// Evidence v2 (issue 12): a forger with a software key signs two checkpoints of one size that name Alice's
    /// real wallet id. Wrapped with its own log, or with Alice's real log from her card, `evidence verify`
    /// proves nothing and names why (exit 7); the same fork of the forger's own wallet, with its own log, is
    /// proven (exit 0).
    @Test func forgedEvidenceNamingARealWalletProvesNothing() throws {
        let world = try World(wallets: ["alice"])
        let alice = try Self.card(world, "alice")
        func fork(_ wallet: SoftwareWallet) throws -> ForkEvidence.Kind {
            var one = wallet, two = wallet
            try one.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [1]))
            try two.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [2]))
            return .conflictingCheckpoints(try one.checkpoint(), try two.checkpoint())
        }
        let forger = try SoftwareWallet(seed: 2, claiming: alice.walletID)
        let forged = try fork(forger)
        for (file, log, reason) in [("own-log", forger.log, "wrong-log"), ("real-log", alice.log, "key-not-in-force")] {
            try Self.write(ForkEvidence(forged, log: log).encoded, world, file)
            let verify = try world.run(["evidence", "verify", file])
            #expect(
                verify.status == 7 && verify.stderr.contains(reason) && verify.stderr.contains(alice.walletID.hex),
                "\(file): exit \(verify.status): \(verify.stderr)")
        }
        let own = try SoftwareWallet(seed: 3)
        let genuine = ForkEvidence(try fork(own), log: own.log)
        try Self.write(genuine.encoded, world, "genuine")
        let verify = try world.run(["evidence", "verify", "genuine"])
        #expect(
            verify.status == 0 && verify.output.contains("evidence OK")
                && verify.output.contains(EvidenceDigest(of: genuine.encoded).hex),
            "exit \(verify.status): \(verify.stderr)")
    }

    /// Type 4 evidence whose retired key event claims sequence 2^64 − 1 (made by the attack's own encoder).
    static let sequenceMaxEvidenceHex = """
        0104011e00d40101ffffffffffffffff124c2c9ff486ed9e21e1969b89c8bb3bc5de7863964d044d2bd0cf236bf50c8d0454\
        a840727a1dba7997bed587376dc4484b6961416a4af0a0480d9afbcb33003150f8eb414ddaad6cee140906a6c18e02814fa7\
        e58992da868caf5edadb64fc9ea1d294bcfadaa57fd3c535e4f671322c002d15fabd3bff7ee2db53b6a6d90dbe04a0423e27\
        0fc8300608ea8c55bb1b785ea20c7050a86d707cb18a7dc8ba6f508d390e8daad837e76b539ea003cd4f9b2ab1f7db9e8b24\
        a920b5cd757d137e6d540000000000000005473045022100c0cce92217461c32f6998d424d8c4aae6a6a3322e3d124309e7f\
        26c78358cfe502206d74b1782514fbf0812c9c13c5bbaf3336bec96110f25a895597d6c3de628172011e00d4010100000000\
        00000010d27ca40e425b2ad34d9926aee44876a032a90319fad2e9f377babeee262cde1404d2ef2b2e27835db0d69981a6f7\
        d5756a38d2b69d1f7a6dc602e0be3a30df47c38f934da424a7faa8eea524d5d6c8623259026bd7babb88fc85f09c6cd54153\
        e583120981ff0cb05212949304beaff772b32ad1b9aff0824d5fdbcf6ae6166db804a0423e270fc8300608ea8c55bb1b785e\
        a20c7050a86d707cb18a7dc8ba6f508d390e8daad837e76b539ea003cd4f9b2ab1f7db9e8b24a920b5cd757d137e6d540000\
        000000000006473045022100ed6f14ed4367d953bafb9cb760ab619cd884fd517dcdda1f438ec49383072e7b022011f22dd6\
        768a4c30393c01b102a7b6fc98a228abcc10c7fc63f4cc2a14a9234c0100c501fea2de67f179aa717e8dadbc6d96d4fa82ba\
        1ef0479edecd28a07ce13835b1810454a840727a1dba7997bed587376dc4484b6961416a4af0a0480d9afbcb33003150f8eb\
        414ddaad6cee140906a6c18e02814fa7e58992da868caf5edadb64fc9effffffffffffffff00000000000000050000000000\
        0000091a30aa34d41d1e0ccc1733a6c3c67460866499f5b8971c7a2379a8c591060b80de7484da36cd94ffc6c4a8c2209940\
        7bdd461a6cd4b2d9a017fc6e58dedb740f0000018bcfe56800000000463044022014cbd1e1e5f60df665bff52f9128bab898\
        81c2f9261183666f1e25b90b5d9da502200ca0ec17955422972868cb75202d4a921a930f720f2f6f026c09a26506b15048
        """
}
