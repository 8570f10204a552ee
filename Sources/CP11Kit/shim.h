#ifndef SECURE_CP11KIT_SHIM_H
#define SECURE_CP11KIT_SHIM_H
// p11-kit ships the PKCS#11 2.40 header and its own module loader.
#include <p11-kit/pkcs11.h>
#include <p11-kit/p11-kit.h>
#include <p11-kit/uri.h>
#endif
