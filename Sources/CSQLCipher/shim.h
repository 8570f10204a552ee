#ifndef SECURE_CSQLCIPHER_SHIM_H
#define SECURE_CSQLCIPHER_SHIM_H
// SQLCipher only declares sqlite3_key and friends when SQLITE_HAS_CODEC is defined before its header.
#define SQLITE_HAS_CODEC 1
#include <sqlcipher/sqlite3.h>
#endif
