import SecureCrypto

/// The hash chain over ledger entries: h(n) = SHA-256(τ ‖ h(n−1) ‖ n ‖ δ(n) ‖ id(n)), with τ the ASCII
/// label "secure-chain-v1" and a zero byte, n as u64 big-endian, δ(n) the entry digest and h(−1) 32 zero
/// bytes. See docs/PROTOCOL.md, "Chain step".
public enum LedgerChain {
    /// τ: the label and its terminating zero byte.
    public static let label: [UInt8] = DomainLabel.bytes("secure-chain-v1")

    /// h(−1), the link before entry 0.
    public static let genesisLink = Digest32.zero

    /// One chain step.
    public static func link(previous: Digest32, position: UInt64, entryDigest: Digest32, id: StatementID) -> Digest32 {
        var writer = ByteWriter(capacity: label.count + 2 * Digest32.byteCount + 8 + StatementID.byteCount)
        writer.write(fixed: label, count: label.count)
        writer.write(previous)
        writer.write(position)
        writer.write(entryDigest)
        writer.write(id)
        return Digest32(of: writer.bytes)
    }

    /// Checks that `entries` continue a chain whose last entry had position `start − 1` and link
    /// `previousLink` (pass 0 and `genesisLink` for a whole ledger), and returns the new head.
    public static func verify(
        _ entries: [LedgerEntry], start: UInt64 = 0,
        previousLink: Digest32 = genesisLink
    ) throws -> Digest32 {
        var link = previousLink
        var expected = start
        for entry in entries {
            guard entry.position == expected else {
                throw LedgerError(.positionGap, "entry \(entry.position) follows where entry \(expected) was expected")
            }
            guard entry.previousLink == link else {
                throw LedgerError(.linkMismatch, "entry \(entry.position) does not link to the entry before it")
            }
            link = entry.link
            expected += 1
        }
        return link
    }
}
