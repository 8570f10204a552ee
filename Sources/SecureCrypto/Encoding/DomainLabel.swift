/// The encoding of a domain-separation label: its ASCII bytes followed by one zero byte. Labels hold no
/// zero byte, so no label's encoding is a prefix of another's, and input hashed or derived under one label
/// can never be read as input under another. Signatures (`SignatureLabel`), the ledger chain, session
/// nonces, the channel's key schedule and records, and key wrapping all use this one encoding.
package enum DomainLabel {
    /// `label` ‖ 0x00.
    package static func bytes(_ label: String) -> [UInt8] {
        precondition(!label.utf8.contains(0), "a domain-separation label holds no zero byte")
        return Array(label.utf8) + [0]
    }
}
