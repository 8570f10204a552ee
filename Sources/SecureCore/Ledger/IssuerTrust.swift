import SecureCrypto

/// A change to the issuers a wallet trusts, recorded as a signed `settings` entry: the trusted set is
/// derived from these entries alone, so `ledger verify` checks each deposit and credit against what was
/// trusted at its position. See docs/PROTOCOL.md, "Settings entries".
///
/// Payload: tag u8 (1 trust, 2 untrust) ‖ issuer wallet id (32) ‖, for a trust, the issuer's key-event log
/// head as this wallet verified it: sequence u64 ‖ event digest (32).
public enum IssuerTrustChange: Hashable, Sendable {
    /// Trust the issuer whose log this wallet verified up to `head`.
    case trust(WalletID, head: KeyEventHead)
    /// Stop trusting the issuer: no new deposit or credit of its asset; money already held stays.
    case untrust(WalletID)

    /// The settings tag of a trust change.
    public static let trustTag: UInt8 = 1
    /// The settings tag of an untrust change.
    public static let untrustTag: UInt8 = 2

    /// The issuer the change is about.
    public var issuer: WalletID {
        switch self {
        case .trust(let id, _), .untrust(let id): id
        }
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 73)
        switch self {
        case .trust(let id, let head):
            writer.write(Self.trustTag)
            writer.write(id)
            writer.write(head.sequence)
            writer.write(head.digest)
        case .untrust(let id):
            writer.write(Self.untrustTag)
            writer.write(id)
        }
        return writer.bytes
    }

    /// The change in a settings payload; nil when the payload is another kind of setting. Throws when a
    /// trust or untrust payload is malformed.
    public static func decode(_ bytes: [UInt8]) throws -> IssuerTrustChange? {
        var reader = ByteReader(bytes)
        guard let tag = reader.readUInt8(), tag == trustTag || tag == untrustTag else { return nil }
        guard let id = reader.read(WalletID.self) else {
            throw FormatError(.invalidValue, "an issuer trust setting is truncated")
        }
        if tag == untrustTag {
            try reader.expectEnd("issuer untrust setting")
            return .untrust(id)
        }
        guard let sequence = reader.readUInt64(), let digest = reader.read(KeyEventDigest.self) else {
            throw FormatError(.invalidValue, "an issuer trust setting is truncated")
        }
        try reader.expectEnd("issuer trust setting")
        return .trust(id, head: KeyEventHead(sequence: sequence, digest: digest))
    }

    /// The trusted set after applying `change` to `set`.
    public static func apply(_ change: IssuerTrustChange, to set: inout Set<WalletID>) {
        switch change {
        case .trust(let id, _): set.insert(id)
        case .untrust(let id): set.remove(id)
        }
    }
}
