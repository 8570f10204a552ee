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

CK_RV secure_baseline_append_loop(CK_FUNCTION_LIST *functions, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key,
                                  unsigned char *pin, unsigned long pin_length, int context_login,
                                  unsigned char *digest, unsigned long digest_length,
                                  unsigned char *application, unsigned long application_length,
                                  unsigned char *label, unsigned long label_length,
                                  unsigned char *value, unsigned long value_length, long count,
                                  uint64_t *nanoseconds, uint64_t *calls) {
    CK_MECHANISM mechanism = { CKM_ECDSA, NULL, 0 };
    CK_OBJECT_CLASS data_class = CKO_DATA;
    CK_BBOOL yes = CK_TRUE;
    /* The object's identity, then what creating it adds: the first four attributes are the search. */
    CK_ATTRIBUTE create[] = {
        { CKA_CLASS, &data_class, sizeof data_class }, { CKA_TOKEN, &yes, sizeof yes },
        { CKA_APPLICATION, application, application_length }, { CKA_LABEL, label, label_length },
        { CKA_PRIVATE, &yes, sizeof yes }, { CKA_MODIFIABLE, &yes, sizeof yes }, { CKA_VALUE, value, value_length },
    };
    CK_ATTRIBUTE *identity = create;
    CK_ULONG identity_count = 4, create_count = sizeof create / sizeof create[0];
    unsigned char signature[64];
    CK_OBJECT_HANDLE old[16];
    uint64_t made = 0;
    uint64_t start = now_ns();
    for (long i = 0; i < count; i++) {
        CK_ULONG signature_length = sizeof signature, found = 0, more = 0;
        CK_OBJECT_HANDLE created = 0;
        CK_RV rv = functions->C_SignInit(session, &mechanism, key);
        made++;
        if (rv != CKR_OK) return rv;
        if (context_login) {
            rv = functions->C_Login(session, CKU_CONTEXT_SPECIFIC, pin, pin_length);
            made++;
            if (rv != CKR_OK) return rv;
        }
        rv = functions->C_Sign(session, digest, digest_length, signature, &signature_length);
        made++;
        if (rv != CKR_OK) return rv;
        rv = functions->C_FindObjectsInit(session, identity, identity_count);
        made++;
        if (rv != CKR_OK) return rv;
        /* The same shape as the Swift search: read until a call returns nothing. */
        do {
            rv = functions->C_FindObjects(session, old + found, 16 - found, &more);
            made++;
            if (rv != CKR_OK) return rv;
            found += more;
        } while (more > 0 && found < 16);
        rv = functions->C_FindObjectsFinal(session);
        made++;
        if (rv != CKR_OK) return rv;
        rv = functions->C_CreateObject(session, create, create_count, &created);
        made++;
        if (rv != CKR_OK) return rv;
        for (CK_ULONG j = 0; j < found; j++) {
            rv = functions->C_DestroyObject(session, old[j]);
            made++;
            if (rv != CKR_OK) return rv;
        }
    }
    *nanoseconds = now_ns() - start;
    *calls = made;
    return CKR_OK;
}
