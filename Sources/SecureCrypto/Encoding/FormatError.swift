/// An error in bytes that came from outside: a stored row, a file or a peer. Equality is by code, so
/// tests and callers match on the kind of failure; the sentence says which field was wrong.
public typealias FormatError = CodedFailure<FormatErrorCode>

/// Stable codes for `FormatError`: the kinds of malformed input.
public enum FormatErrorCode: String, FailureCode {
    /// The version byte names a format this build does not know.
    case unsupportedVersion = "unsupported-version"
    /// A length prefix exceeds the field's named limit.
    case fieldTooLong = "field-too-long"
    /// A field holds a value the format forbids (an unknown kind, a flag bit, a non-UTF-8 note…).
    case invalidValue = "invalid-value"
    /// Bytes remain after a complete record.
    case trailingBytes = "trailing-bytes"
    /// Records that must be in a canonical order are not.
    case notCanonical = "not-canonical"

    /// Malformed bytes are not one of the failures the command line names, so they exit 1.
    public var kind: FailureKind { .failure }
}
