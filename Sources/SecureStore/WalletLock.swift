import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One writer per wallet: an exclusive `flock` on the wallet's lock file, held for the life of this
/// object. A second process gets a clear "wallet busy" at once rather than waiting.
public final class WalletLock {
    private let descriptor: Int32

    /// Takes the lock or throws `.walletBusy`.
    public init(path: String) throws {
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(.io, "cannot open the wallet lock \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            close(descriptor)
            throw busy
                ? StoreError(.walletBusy, "the wallet is busy: another secure process is using it (lock \(path)); wait for it to finish")
                : StoreError(.io, "cannot lock \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
