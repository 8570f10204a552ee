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

/// The token's own limit for the operations one ledger append performs, with nothing else in the loop:
/// the checkpoint signature (C_SignInit, C_Login(CKU_CONTEXT_SPECIFIC) when `context_login` is set,
/// C_Sign), then the anchor replacement (C_FindObjectsInit/C_FindObjects/C_FindObjectsFinal for the old
/// private CKO_DATA token object of `application` and `label`, C_CreateObject of the new one holding
/// `value`, C_DestroyObject of each old object found), with the templates SecureToken's
/// `replaceDataObject` uses, in the same attribute order. `count` rounds; returns the first CK_RV that is
/// not CKR_OK, or CKR_OK; `nanoseconds` receives the loop's wall time and `calls` the number of PKCS#11
/// calls it made.
CK_RV secure_baseline_append_loop(CK_FUNCTION_LIST *functions, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key,
                                  unsigned char *pin, unsigned long pin_length, int context_login,
                                  unsigned char *digest, unsigned long digest_length,
                                  unsigned char *application, unsigned long application_length,
                                  unsigned char *label, unsigned long label_length,
                                  unsigned char *value, unsigned long value_length, long count,
                                  uint64_t *nanoseconds, uint64_t *calls);
#endif
