/// An error in bytes that came from outside: a stored row, a file or a peer. Equality is by code, so
/// tests and callers match on the kind of failure; the sentence says which field was wrong.
public typealias FormatError = CodedFailure<FormatErrorCode>

/// Stable codes for `FormatError`: the kinds of malformed input.
public enum FormatErrorCode: FailureCode, CaseNameCode {
    /// The version byte names a format this build does not know.
    case unsupportedVersion
    /// A length prefix exceeds the field's named limit.
    case fieldTooLong
    /// A field holds a value the format forbids (an unknown kind, a flag bit, a non-UTF-8 note…).
    case invalidValue
    /// Bytes remain after a complete record.
    case trailingBytes
    /// Records that must be in a canonical order are not.
    case notCanonical

    /// Malformed bytes are not one of the failures the command line names, so they exit 1.
    public var kind: FailureKind { .failure }
}
