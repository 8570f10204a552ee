import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One writer per wallet: an exclusive `flock` on the wallet's lock file, held for the life of this
/// object. A second process gets a clear "wallet busy" at once rather than waiting.
///
/// Only the wallet (SecureWallet) takes it, when it opens for appending, after its token session is open
/// and so after the PIN was read: a PIN prompt never holds the wallet. Reading opens take no lock at all;
/// they read a WAL snapshot that a writer never blocks. The lock is not public, so no command can take it
/// early or hold it across a read.
package final class WalletLock {
    private let descriptor: Int32

    /// Takes the lock or throws `.walletBusy`.
    package init(path: String) throws {
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(.io, "cannot open the wallet lock \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            close(descriptor)
            throw busy
                ? StoreError(
                    .walletBusy,
                    "the wallet is busy: another secure process is using it (lock \(path)); wait for it to finish")
                : StoreError(.io, "cannot lock \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
