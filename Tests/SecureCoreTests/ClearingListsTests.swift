import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// The issuer's lists (docs/CLEARING.md §2.9): listing from the records, increments published by diff, the
/// digest chain a wallet follows against a signed head (gaps, wrong digests, wrong signers and rollbacks
/// refused), settlements, and the encodings with every truncation and extension refused.
@Suite("Clearing lists")
struct ClearingListsTests {
    let clearing = try! SoftwareSigner()

    func head(_ list: ListHead, issuer: WalletID, signer: SoftwareSigner? = nil) throws -> SignedClearingTreeHead {
        try ClearingTreeHead(
            issuer: issuer, delegationSequence: 1, batch: list.version, time: SoftwareWallet.startTime, leafCount: 1,
            root: Fixture.id(0x33), list: list
        ).sign(with: signer ?? clearing)
    }

    @Test("The list digest chain: the documented vector")
    func chainVector() throws {
        let add = ListIncrement.add(wallet: Fixture.id(0xA1), grounds: .unsynced, evidence: Fixture.id(0x00))
        let remove = ListIncrement.remove(wallet: Fixture.id(0xA1), grounds: .unsynced, settlement: Fixture.id(0xB2))
        #expect(
            Hex.encode(add.encoded) == "0101" + String(repeating: "a1", count: 32) + "03"
                + String(repeating: "00", count: 32))
        let one = ListHead.empty.appending(add)
        let two = one.appending(remove)
        #expect(one.digest.hex == "caa70b57680135c2e62da3848cef6ad2f1469561d53d4d7e6fdea1bc46e61530")
        #expect(two.digest.hex == "35d93e386a1c66bd2cdfe87aa260801ffb71fa8b5d140b3bc0d1ecfe699b0fb5")
    }

    @Test("Unsynced payers are listed, then removed when they sync; a follower tracks it")
    func unsyncedListing() throws {
        var world = try ClearingWorld(wallets: 2)
        try world.mint(10_000, to: 0)
        let transfer = try world.pay(1_000, from: 0, to: 1)
        try world.credit(transfer, by: 1)
        try world.sync(1)
        let week = ClearingLimits.unsyncedAfterMillisecondsDefault
        #expect(try world.book.listings(now: world.time, unsyncedAfter: week).map(\.grounds) == [.unsynced])
        let added = try world.book.publishListings(now: world.time, unsyncedAfter: week)
        #expect(added == [.add(wallet: world.wallets[0].walletID, grounds: .unsynced, evidence: ListHead.empty.digest)])
        #expect(try world.book.publishListings(now: world.time, unsyncedAfter: week).isEmpty)
        var follower = ClearingListFollower(issuer: world.issuer)
        #expect(
            follower.apply(
                added, signedHead: try head(world.store.listHead(), issuer: world.issuer),
                clearingKey: clearing.publicKey) == nil)
        #expect(follower.isListed(world.wallets[0].walletID, .unsynced))

        try world.sync(0)
        let removed = try world.book.publishListings(now: world.time, unsyncedAfter: week)
        let digest = Digest32(of: try world.wallets[0].checkpoint().checkpoint.encoded)
        #expect(removed == [.remove(wallet: world.wallets[0].walletID, grounds: .unsynced, settlement: digest)])
        #expect(
            follower.apply(
                removed, signedHead: try head(world.store.listHead(), issuer: world.issuer),
                clearingKey: clearing.publicKey) == nil)
        #expect(follower.listings.isEmpty && follower.head == world.store.listHead())
    }

    @Test("Two payees' unmatched credits beyond the payer's cosigned size list it inconsistent")
    func unprovenCheckpoints() throws {
        var world = try ClearingWorld(wallets: 3)
        try world.mint(10_000, to: 0)
        let one = try world.pay(1_000, from: 0, to: 1)
        let two = try world.pay(1_000, from: 0, to: 2)
        try world.credit(one, by: 1)
        try world.credit(two, by: 2)
        try world.sync(1)
        try world.sync(2)
        let listings = try world.book.listings(now: world.time, unsyncedAfter: 1_000_000)
        #expect(Set(listings.map(\.grounds)) == [.inconsistent, .unsynced])
        try world.sync(0)
        #expect(try world.book.listings(now: world.time, unsyncedAfter: 1_000_000).isEmpty)
    }

    @Test("A settlement signed by the clearing key ends a listing; other keys and unsynced listings are refused")
    func settlement() throws {
        var world = try ClearingWorld(wallets: 2)
        try world.mint(10_000, to: 0)
        let transfer = try world.pay(2_500, from: 0, to: 1)
        try world.credit(transfer, by: 1)
        _ = try world.refuse(transfer, by: 1)
        try world.sync(0)
        try world.sync(1)
        let added = try world.book.publishListings(now: world.time, unsyncedAfter: 1_000_000)
        guard case .add(let wallet, .inconsistent, let digest) = try #require(added.first) else {
            Issue.record("no inconsistent listing: \(added)")
            return
        }
        let settlement = try ClearingSettlement(
            issuer: world.issuer, wallet: wallet, listingVersion: 1, grounds: .inconsistent, groundsDigest: digest,
            note: "refund agreed, case 17")
        #expect(
            try world.book.settle(try settlement.sign(with: try SoftwareSigner()), clearingKey: clearing.publicKey)
                == .invalidSignature)
        let unsynced = try ClearingSettlement(
            issuer: world.issuer, wallet: wallet, listingVersion: 1, grounds: .unsynced, groundsDigest: digest, note: ""
        )
        #expect(
            try world.book.settle(try unsynced.sign(with: clearing), clearingKey: clearing.publicKey)
                == .unsyncedNotSettled)
        let signed = try settlement.sign(with: clearing)
        #expect(try world.book.settle(signed, clearingKey: clearing.publicKey) == .accepted)
        let removed = try world.book.publishListings(now: world.time, unsyncedAfter: 1_000_000)
        #expect(removed == [.remove(wallet: wallet, grounds: .inconsistent, settlement: settlement.digest)])
        #expect(try world.book.publishListings(now: world.time, unsyncedAfter: 1_000_000).isEmpty)
    }

    /// Three increments of a list and the signed head after them.
    func threeIncrements() throws -> ([ListIncrement], ListHead) {
        let increments: [ListIncrement] = [
            .add(wallet: Fixture.id(1), grounds: .unsynced, evidence: Fixture.id(0)),
            .add(wallet: Fixture.id(2), grounds: .proven, evidence: Fixture.id(9)),
            .remove(wallet: Fixture.id(1), grounds: .unsynced, settlement: Fixture.id(7)),
        ]
        return (increments, increments.reduce(ListHead.empty) { $0.appending($1) })
    }

    @Test("A follower refuses gaps, wrong digests, wrong signers, rollbacks and impossible increments")
    func followerRefusals() throws {
        let issuer: WalletID = Fixture.id(0x1A)
        let (increments, target) = try threeIncrements()
        let signed = try head(target, issuer: issuer)
        let key = clearing.publicKey
        var follower = ClearingListFollower(issuer: issuer)
        #expect(follower.apply(Array(increments.dropFirst()), signedHead: signed, clearingKey: key) == .gap)
        #expect(follower.apply(increments + [increments[0]], signedHead: signed, clearingKey: key) == .gap)
        var wrong = increments
        wrong[1] = .add(wallet: Fixture.id(2), grounds: .proven, evidence: Fixture.id(8))
        #expect(follower.apply(wrong, signedHead: signed, clearingKey: key) == .wrongDigest)
        #expect(
            follower.apply(
                increments, signedHead: try head(target, issuer: issuer, signer: try SoftwareSigner()), clearingKey: key
            ) == .headInvalid)
        #expect(
            follower.apply(increments, signedHead: try head(target, issuer: Fixture.id(0x1B)), clearingKey: key)
                == .headInvalid)
        var impossible = increments
        impossible[2] = .remove(wallet: Fixture.id(3), grounds: .unsynced, settlement: Fixture.id(7))
        #expect(follower.apply(impossible, signedHead: signed, clearingKey: key) == .invalidIncrement)
        #expect(follower.head == .empty && follower.listings.isEmpty)
        #expect(follower.apply(increments, signedHead: signed, clearingKey: key) == nil)
        #expect(follower.isListed(Fixture.id(2), .proven) && !follower.isListed(Fixture.id(1), .unsynced))
        // An older head is a rollback; the same head again with nothing new is fine.
        #expect(
            follower.apply([], signedHead: try head(ListHead.empty, issuer: issuer), clearingKey: key) == .headBehind)
        #expect(follower.apply([], signedHead: signed, clearingKey: key) == nil)
    }

    @Test("List increments and settlements round-trip; every truncation and extension is refused")
    func encodings() throws {
        let (increments, _) = try threeIncrements()
        for increment in increments {
            #expect(try ListIncrement.decode(increment.encoded) == increment)
            ClearingEncodingSweep.sweep(increment.encoded, "increment") { try ListIncrement.decode($0) }
        }
        let settlement = try ClearingSettlement(
            issuer: Fixture.id(0x1A), wallet: Fixture.id(0xA1), listingVersion: 7, grounds: .proven,
            groundsDigest: Fixture.id(0xE0), note: "settled")
        #expect(try ClearingSettlement.decode(settlement.encoded) == settlement)
        ClearingEncodingSweep.sweep(settlement.encoded, "settlement") { try ClearingSettlement.decode($0) }
        let signed = try settlement.sign(with: clearing)
        #expect(
            try SignedClearingSettlement.decode(signed.encoded) == signed
                && signed.isValid(signedBy: clearing.publicKey))
        ClearingEncodingSweep.sweep(signed.encoded, "signed settlement") { try SignedClearingSettlement.decode($0) }
        #expect(throws: FormatError.self) {
            try ClearingSettlement(
                issuer: Fixture.id(1), wallet: Fixture.id(2), listingVersion: 1, grounds: .proven,
                groundsDigest: Fixture.id(3), note: String(repeating: "x", count: 257))
        }
        var bad = increments[0].encoded
        bad[1] = 3
        #expect(throws: FormatError.self) { try ListIncrement.decode(bad) }
        bad = increments[0].encoded
        bad[34] = 4
        #expect(throws: FormatError.self) { try ListIncrement.decode(bad) }
    }
}

/// Go's `TestBadLengths` for the clearing's encodings: every proper prefix decodes to nothing (nil or an
/// error, never a value) and every one-byte extension throws.
enum ClearingEncodingSweep {
    static func sweep<Value>(_ bytes: [UInt8], _ name: String, _ decode: ([UInt8]) throws -> Value?) {
        for count in 0..<bytes.count {
            let decoded = (try? decode(Array(bytes.prefix(count)))) ?? nil
            #expect(decoded == nil, "\(name): the first \(count) of \(bytes.count) bytes decoded")
        }
        for extra: UInt8 in [0, 0xFF] {
            #expect(throws: (any Error).self, "\(name) with a byte \(extra) appended") {
                try decode(bytes + [extra])
            }
        }
    }
}
