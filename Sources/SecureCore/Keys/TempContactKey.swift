import SecureCrypto

// TEMPORARY until i17-keys merges; never committed.
extension KeyEvent {
    public var contactKeyDigest: Digest32 { .zero }
    public static func contactKeyDigest(of key: MLKEM1024.PublicKey) -> Digest32 { .zero }
}
