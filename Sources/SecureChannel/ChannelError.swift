import SecureCrypto

/// An error from the channel. Equality is by code, so tests and callers match on the kind of failure;
/// the message is a sentence for a person.
public struct ChannelError: CodedError {
    /// Stable codes for the kinds of failure callers tell apart.
    public enum Code: CaseNameCode {
        /// A message or frame was cut short.
        case truncated
        /// A message or frame broke its format (bad length, trailing bytes, unknown kind).
        case malformed
        /// A well-formed message arrived in a state that does not expect it.
        case unexpectedMessage
        /// The peer speaks a protocol version this build does not.
        case unsupportedVersion
        /// The two sides' contributions name different suites.
        case noCommonSuite
        /// The initiator's revealed contribution does not open its commitment.
        case commitmentMismatch
        /// The peer's public key or ciphertext failed its checks.
        case invalidPeerKey
        /// The peer's key-confirmation MAC is wrong: a tampered or downgraded handshake, or a different key.
        case keyConfirmationFailed
        /// A record failed authentication: tampered, from another direction or from another session.
        case recordAuthenticationFailed
        /// A record's counter is not the next one: a replay or a reordering.
        case recordOutOfOrder
        /// A payload or frame exceeds its limit.
        case tooLarge
        /// A wait ran out (handshake, connect, send or receive).
        case timeout
        /// The channel or transport is closed.
        case closed
        /// The operating system refused a socket operation.
        case transport
    }

    /// What kind of failure this is.
    public let code: Code
    /// A sentence for a person.
    public let message: String

    /// Makes an error with a code and a sentence.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// A broken channel is not one of the failures the command line names, so it exits 1.
    public var kind: FailureKind { .failure }
}
