#ifndef SECURE_VALGRIND_SHIM_H
#define SECURE_VALGRIND_SHIM_H
// Constant-time helpers. Marks memory secret (undefined) or public (defined) for valgrind memcheck, so that a run under valgrind
// reports any branch or memory index that depends on a secret. Outside valgrind each call is a few
// no-op instructions (valgrind's client-request sequence), so it may stay in release code.
#include <stddef.h>

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define SECURE_HAVE_VALGRIND 1
#endif
#endif

static inline void secure_ct_mark_secret(const void *pointer, size_t count) {
#ifdef SECURE_HAVE_VALGRIND
    (void)VALGRIND_MAKE_MEM_UNDEFINED(pointer, count);
#else
    (void)pointer; (void)count;
#endif
}

static inline void secure_ct_mark_public(const void *pointer, size_t count) {
#ifdef SECURE_HAVE_VALGRIND
    (void)VALGRIND_MAKE_MEM_DEFINED(pointer, count);
#else
    (void)pointer; (void)count;
#endif
}

// Returns its argument, hidden from the optimiser by an empty asm statement. A mask made from a secret
// bit (0x00 or 0xFF) passes through here, so LLVM cannot see that it is boolean and turn a masked
// selection into a branch or a secret-indexed load (it did: a select between two buffers' addresses).
static inline unsigned char secure_ct_value_barrier_u8(unsigned char value) {
#if defined(__GNUC__) || defined(__clang__)
    __asm__("" : "+r"(value));
#endif
    return value;
}

static inline int secure_ct_running_on_valgrind(void) {
#ifdef SECURE_HAVE_VALGRIND
    return (int)RUNNING_ON_VALGRIND;
#else
    return 0;
#endif
}

#endif
