#ifndef SECURE_PKCS11_BASELINE_H
#define SECURE_PKCS11_BASELINE_H
#include <p11-kit/pkcs11.h>
#include <stdint.h>

/// The token's own signing limit: `count` rounds of C_SignInit, C_Login(CKU_CONTEXT_SPECIFIC) when
/// `context_login` is set, and C_Sign into a 64-byte buffer, with nothing else in the loop. Returns the
/// first CK_RV that is not CKR_OK, or CKR_OK; `nanoseconds` receives the loop's wall time.
CK_RV secure_baseline_sign_loop(CK_FUNCTION_LIST *functions, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key,
                                unsigned char *pin, unsigned long pin_length, int context_login,
                                unsigned char *digest, unsigned long digest_length, long count,
                                uint64_t *nanoseconds);
#endif
