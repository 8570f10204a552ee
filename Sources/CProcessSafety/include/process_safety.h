#ifndef SECURE_PROCESS_SAFETY_H
#define SECURE_PROCESS_SAFETY_H
// What `secure` does to its own process before it reads a PIN or a key: no core dump may ever write the PIN,
// the database key or a wrapped key to disk. prctl is variadic, which Swift cannot call, hence this header.
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>

// Makes the process undumpable (no core file, no ptrace by other users' processes) and sets the core size
// limit to zero. Returns 0, or -1 with errno set by the first call that failed.
static inline int secure_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -1;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return -1;
    return 0;
}

// Whether the process is dumpable (1) or not (0), as the kernel reports it.
static inline int secure_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

// Excludes the pages of a secret buffer from any core dump (MADV_DONTDUMP works on whole pages: the caller
// passes a page-aligned buffer). Returns 0 or -1.
static inline int secure_exclude_from_dumps(void *pointer, size_t count) {
    return madvise(pointer, count, MADV_DONTDUMP);
}
// While a PIN is read with echo off, a signal that ends the process (Ctrl-C, a hang-up, kill) must first give
// the terminal its echo back. `secure_tty_guard` arms handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT (one
// PIN prompt at a time per process; a signal the process ignores stays ignored) that restore the terminal
// `fd` to `saved`, put the previous action back and raise the signal again; `secure_tty_unguard` puts the
// previous handlers back. In shim.c, since the handler needs state of its own.
#include <termios.h>
void secure_tty_guard(int fd, const struct termios *saved);
void secure_tty_unguard(void);
#endif
