#ifndef SECURE_CLIBPQ_SHIM_H
#define SECURE_CLIBPQ_SHIM_H
// The clearing's storage: PostgreSQL's client library.
#include <libpq-fe.h>
#endif
