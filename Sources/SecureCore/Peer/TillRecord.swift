import SecureCrypto

/// A till's DNS-SD announcement (docs/TILL.md §3.1). Unlike a wallet's `_secure-pay._tcp` record, a till is
/// public by design: its instance name is the operator's label and 4 hex digits fresh per run (`MIZAN-1A2B`),
/// which the payer picks by and sees. The TXT record holds only the version and a nonce fresh per amount;
/// never the amount, the note, the wallet id or contact tags.
public enum TillRecord {
    /// The DNS-SD service type tills announce.
    public static let serviceType = "_secure-till._tcp"
    /// `--label`'s default.
    public static let defaultLabel = "TILL"
    /// A label is 1 to 20 characters of A-Z, 0-9 and "-"; with "-XXXX" the instance name stays short enough for
    /// a screen and far below DNS-SD's 63 bytes.
    public static let labelCharacterCountMax = 20

    /// The label as announced (upper-cased), or a reason it is refused.
    public static func label(_ text: String) -> Result<String, DiscoveryError> {
        let upper = text.uppercased()
        guard !upper.isEmpty, upper.count <= labelCharacterCountMax,
            upper.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" })
        else {
            return .failure(
                DiscoveryError(
                    .malformedRecord,
                    "a till's label is 1 to \(labelCharacterCountMax) characters of A-Z, 0-9 and \"-\""))
        }
        return .success(upper)
    }

    /// The instance name for a run: the label, "-" and 4 uppercase hex digits from the system CSPRNG.
    public static func instanceName(label: String) -> String {
        label + "-" + Hex.encode(SystemRandom.bytes(2)).uppercased()
    }

    /// The label part of an instance name of the shape `LABEL-XXXX`, or nil when the name is not a till's.
    public static func label(ofInstance name: String) -> String? {
        guard let dash = name.lastIndex(of: "-") else { return nil }
        let suffix = name[name.index(after: dash)...]
        guard suffix.count == 4,
            suffix.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || ("A"..."F").contains($0) }),
            case .success(let label) = label(String(name[..<dash])), label == String(name[..<dash])
        else { return nil }
        return label
    }

    /// The TXT record for one amount: `v=1` and a fresh 16-byte nonce, nothing else.
    public static func txt(nonce: [UInt8] = SystemRandom.bytes(DiscoveryRecord.nonceByteCount)) -> [String] {
        precondition(nonce.count == DiscoveryRecord.nonceByteCount)
        return ["v=\(DiscoveryRecord.version)", "n=\(Hex.encode(nonce))"]
    }

    /// Reads a till's TXT record: the version and nonce rules of a wallet's record (a missing or repeated key,
    /// another version, a bad nonce, an over-long entry are refused); unknown keys are ignored.
    public static func check(txt pairs: [(key: String, value: String)]) throws {
        _ = try DiscoveryRecord(txt: pairs)
    }
}
