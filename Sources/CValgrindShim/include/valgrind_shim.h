#ifndef SECURE_VALGRIND_SHIM_H
#define SECURE_VALGRIND_SHIM_H
// Marks memory secret (undefined) or public (defined) for valgrind memcheck, so that a run under valgrind
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

static inline int secure_ct_running_on_valgrind(void) {
#ifdef SECURE_HAVE_VALGRIND
    return (int)RUNNING_ON_VALGRIND;
#else
    return 0;
#endif
}

#endif
