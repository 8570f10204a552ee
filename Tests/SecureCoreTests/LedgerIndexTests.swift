import SecureCrypto
import Testing

@testable import SecureCore

/// The index commitment D (`LedgerIndex`) and checkpoint version 2, which carries it. The vectors are the
/// ones docs/PROTOCOL.md gives ("Index commitment"), computed there with Python's hashlib from the
/// documented encoding alone.
@Suite("Index commitment D")
struct LedgerIndexTests {
    /// The example of docs/PROTOCOL.md: a deposit's row, a payment out's row and that payment's transfer.
    static let deposit = LedgerIndex.StatementRow(
        signer: Fixture.bytes(0xAA, 32), id: Fixture.bytes(0x01, 16), kind: 1, digest: Fixture.bytes(0xDD, 32),
        position: 1)
    static let payment = LedgerIndex.StatementRow(
        signer: Fixture.bytes(0x0B, 32), id: Fixture.bytes(0x02, 16), kind: 2, digest: Fixture.bytes(0xEE, 32),
        position: 2)
    static let pending = LedgerIndex.OutgoingRow(transferID: Fixture.bytes(0x02, 16), status: 0)

    /// The encoding written out field by field, independently of `LedgerIndex.Hasher`'s buffering.
    static func reference(_ statements: [LedgerIndex.StatementRow], _ outgoing: [LedgerIndex.OutgoingRow]) -> [UInt8] {
        func blob(_ bytes: [UInt8]) -> [UInt8] {
            let count = UInt32(bytes.count)
            return [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: count >> $0) } + bytes
        }
        func integer(_ value: Int64) -> [UInt8] {
            (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: value) >> (56 - 8 * UInt64($0))) }
        }
        var bytes = Array("secure-index-v1".utf8) + [0]
        for row in statements {
            bytes +=
                [1] + blob(row.signer) + blob(row.id) + integer(row.kind) + blob(row.digest) + integer(row.position)
        }
        for row in outgoing { bytes += [2] + blob(row.transferID) + integer(row.status) }
        return bytes
    }

    @Test("the documented vectors: empty tables, the example, and the example with its payment confirmed")
    func vectors() {
        #expect(LedgerIndex.emptyDigest.hex == "73409c1a24c3aa2e8302efd3c6c60846c2b6b12af72ce4bd8cd0782ea530aa40")
        // Given out of order: D sorts the rows by (signer, id), so the payment's 0x0B… signer comes first.
        let example = LedgerIndex.digest(statements: [Self.deposit, Self.payment], outgoing: [Self.pending])
        #expect(example.hex == "8207fffb15ca5928df264cd89f4ab21b658a94e0b963a471326a4048a810a9c2")
        #expect(example == Digest32(of: Self.reference([Self.payment, Self.deposit], [Self.pending])))
        let confirmed = LedgerIndex.digest(
            statements: [Self.payment, Self.deposit],
            outgoing: [LedgerIndex.OutgoingRow(transferID: Self.pending.transferID, status: 1)])
        #expect(confirmed.hex == "ff47eb9adddfe1c52c1e984c3af6778e22c1f3dbdbae25aa3a0e150c21c4687b")
    }

    @Test("the streamed hash equals the written-out encoding across many buffer flushes")
    func streamingMatchesTheReference() {
        var random = SeededRandom(seed: 12)
        var statements: [LedgerIndex.StatementRow] = []
        for position in 0..<2_000 {
            statements.append(
                LedgerIndex.StatementRow(
                    signer: random.bytes(32), id: random.bytes(16), kind: Int64(position % 11),
                    digest: random.bytes(32), position: Int64(position)))
        }
        let outgoing = (0..<700).map { LedgerIndex.OutgoingRow(transferID: random.bytes(16), status: Int64($0 % 2)) }
        let sortedStatements = statements.sorted { $0.precedes($1) }
        let sortedOutgoing = outgoing.sorted { $0.transferID.lexicographicallyPrecedes($1.transferID) }
        #expect(Self.reference(sortedStatements, sortedOutgoing).count > 3 * LedgerIndex.Hasher.bufferByteCount)
        #expect(
            LedgerIndex.digest(statements: statements.shuffled(), outgoing: outgoing.reversed())
                == Digest32(of: Self.reference(sortedStatements, sortedOutgoing)))
    }

    @Test("every edit of a committed column, and every row added or removed, changes D")
    func everyEditChangesD() {
        let rows = [Self.payment, Self.deposit]
        let base = LedgerIndex.digest(statements: rows, outgoing: [Self.pending])
        let row = Self.deposit
        let edits: [(String, LedgerIndex.StatementRow)] = [
            ("signer", .init(signer: Fixture.bytes(0xAB, 32), id: row.id, kind: 1, digest: row.digest, position: 1)),
            ("id", .init(signer: row.signer, id: Fixture.bytes(0x03, 16), kind: 1, digest: row.digest, position: 1)),
            ("kind", .init(signer: row.signer, id: row.id, kind: 3, digest: row.digest, position: 1)),
            ("digest", .init(signer: row.signer, id: row.id, kind: 1, digest: Fixture.bytes(0xDE, 32), position: 1)),
            ("position", .init(signer: row.signer, id: row.id, kind: 1, digest: row.digest, position: 9)),
            // A byte moved from the signer to the id: the lengths keep the two rows apart.
            (
                "boundary",
                .init(
                    signer: Array(row.signer.dropLast()), id: [row.signer.last!] + row.id, kind: 1,
                    digest: row.digest, position: 1)
            ),
        ]
        for (name, edited) in edits {
            #expect(
                LedgerIndex.digest(statements: [Self.payment, edited], outgoing: [Self.pending]) != base, "\(name)")
        }
        #expect(LedgerIndex.digest(statements: [Self.payment], outgoing: [Self.pending]) != base, "a row removed")
        #expect(LedgerIndex.digest(statements: rows, outgoing: []) != base, "a transfer removed")
        #expect(
            LedgerIndex.digest(
                statements: rows,
                outgoing: [Self.pending, LedgerIndex.OutgoingRow(transferID: Fixture.bytes(0x09, 16), status: 0)])
                != base, "a transfer added")
        // A statement row cannot pass for a transfer row: the tags differ.
        #expect(
            LedgerIndex.digest(statements: [], outgoing: [])
                != LedgerIndex.digest(
                    statements: [],
                    outgoing: [
                        LedgerIndex.OutgoingRow(transferID: [], status: 0)
                    ]))
    }

    @Test("a conflict entry adds no row; every other statement entry adds its (signer, id, kind, digest, position)")
    func rowsOfEntries() throws {
        let entries = try Fixture.sampleEntries()
        for entry in entries {
            let row = LedgerIndex.statementRow(of: entry)
            if let statement = entry.statement, entry.kind != .conflictingStatement {
                #expect(row?.signer == statement.signer.bytes && row?.id == statement.id.bytes)
                #expect(row?.kind == Int64(entry.kind.rawValue) && row?.digest == statement.payloadDigest.bytes)
                #expect(row?.position == Int64(entry.position))
            } else {
                #expect(row == nil, "entry \(entry.position)")
            }
        }
    }

    /// The checkpoint of docs/PROTOCOL.md's vector: the generator point as the wallet key (any valid point
    /// will do for an encoding), an empty snapshot, and the example's D as its last field.
    static func vectorCheckpoint() throws -> Checkpoint {
        let generator = Hex.decode(
            "046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")!
        return try Checkpoint(
            walletID: Fixture.id(0x11), walletKey: try P256.PublicKey(x963: generator), keySequence: 0,
            keyEventPosition: 0, size: 2, root: Fixture.id(0x22), head: Fixture.id(0x33), time: Fixture.time,
            snapshot: LedgerSnapshot(LedgerState()),
            index: LedgerIndex.digest(statements: [Self.deposit, Self.payment], outgoing: [Self.pending]))
    }

    @Test("checkpoint version 2 ends with D, round-trips, and refuses version 1 and every truncation")
    func checkpointVersionTwo() throws {
        let checkpoint = try Self.vectorCheckpoint()
        let expected =
            "02" + String(repeating: "11", count: 32)
            + "046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
            + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5"
            + "0000000000000000" + "0000000000000000" + "0000000000000002" + String(repeating: "22", count: 32)
            + String(repeating: "33", count: 32) + "0000018df9e2b200" + "00" + "0000"
            + "8207fffb15ca5928df264cd89f4ab21b658a94e0b963a471326a4048a810a9c2"
        #expect(Hex.encode(checkpoint.encoded) == expected)
        #expect(try Checkpoint.decode(checkpoint.encoded) == checkpoint)
        var versionOne = checkpoint.encoded
        versionOne[0] = 1
        #expect(throws: FormatError.self) { try Checkpoint.decode(versionOne) }
        // A version-1 checkpoint (no D) read as version 2 is short, never a checkpoint with a made-up D.
        let withoutD = [UInt8](checkpoint.encoded.dropLast(Digest32.byteCount))
        #expect(try Checkpoint.decode(withoutD) == nil)
        for length in 0..<checkpoint.encoded.count {
            #expect(try Checkpoint.decode(Array(checkpoint.encoded.prefix(length))) == nil, "truncated to \(length)")
        }
        #expect(throws: FormatError.self) { try Checkpoint.decode(checkpoint.encoded + [0]) }
    }
}
