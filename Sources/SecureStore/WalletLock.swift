import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One writer per wallet: an exclusive `flock` on the wallet's lock file, held for the life of this
/// object. A second process gets a clear "wallet busy" at once, or waits up to `--wait SECONDS` for it.
///
/// Only the wallet (SecureWallet) takes it, when it opens for appending, after its token session is open
/// and so after the PIN was read: a PIN prompt never holds the wallet. Reading opens take no lock at all;
/// they read a WAL snapshot that a writer never blocks. The lock is not public, so no command can take it
/// early or hold it across a read.
package final class WalletLock {
    private let descriptor: Int32

    /// How long a writer queues for the lock before it fails busy: 0 (fail at once) unless the command
    /// was given `--wait SECONDS`. Set once by the command line before the wallet opens.
    nonisolated(unsafe) package static var waitSeconds: Double = 0

    /// Takes the lock, waiting up to `waitSeconds` for the writer that holds it, or throws `.walletBusy`.
    package init(path: String) throws {
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(.io, "cannot open the wallet lock \(path): \(String(cString: strerror(errno)))")
        }
        let deadline = Date(timeIntervalSinceNow: Self.waitSeconds)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let busy = errno == EWOULDBLOCK
            if busy && Date() < deadline {
                usleep(50_000)
                continue
            }
            close(descriptor)
            throw busy
                ? StoreError(
                    .walletBusy,
                    "the wallet is busy: another secure process is using it (lock \(path)); wait for it to finish"
                        + (Self.waitSeconds > 0 ? " (waited \(Self.waitSeconds) s)" : ", or pass --wait SECONDS"))
                : StoreError(.io, "cannot lock \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
