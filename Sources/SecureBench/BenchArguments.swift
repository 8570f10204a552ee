// secure-bench's exit codes; its argument parser is CommandLineSupport's, the same one `secure` uses.

/// secure-bench's exit codes: the first three of `secure`'s.
enum ExitCode: Int32 {
    case success = 0, failure = 1, usage = 2
}
