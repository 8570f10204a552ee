#include "baseline.h"
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

CK_RV secure_baseline_sign_loop(CK_FUNCTION_LIST *functions, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key,
                                unsigned char *pin, unsigned long pin_length, int context_login,
                                unsigned char *digest, unsigned long digest_length, long count,
                                uint64_t *nanoseconds) {
    CK_MECHANISM mechanism = { CKM_ECDSA, NULL, 0 };
    unsigned char signature[64];
    uint64_t start = now_ns();
    for (long i = 0; i < count; i++) {
        CK_ULONG signature_length = sizeof signature;
        CK_RV rv = functions->C_SignInit(session, &mechanism, key);
        if (rv != CKR_OK) return rv;
        if (context_login) {
            rv = functions->C_Login(session, CKU_CONTEXT_SPECIFIC, pin, pin_length);
            if (rv != CKR_OK) return rv;
        }
        rv = functions->C_Sign(session, digest, digest_length, signature, &signature_length);
        if (rv != CKR_OK) return rv;
    }
    *nanoseconds = now_ns() - start;
    return CKR_OK;
}
