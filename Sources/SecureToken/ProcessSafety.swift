import CProcessSafety
import Foundation

/// What every `secure` command does first: no core dump may write the PIN, the database key or a wrapped key
/// to disk, so the process is made undumpable and its core size limit zero before anything is read.
public enum ProcessSafety {
    /// Switches core dumps off for this process; throws with the cause when the kernel refuses.
    public static func disableCoreDumps() throws {
        guard secure_disable_core_dumps() == 0 else {
            throw TokenError(
                .unsupported, "core dumps could not be switched off: \(String(cString: strerror(errno)))")
        }
    }

    /// Whether the kernel would write a core dump of this process.
    public static var isDumpable: Bool { secure_is_dumpable() != 0 }
}
