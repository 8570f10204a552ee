#ifndef SECURE_CMICROHTTPD_SHIM_H
#define SECURE_CMICROHTTPD_SHIM_H
// The clearing's HTTP server: libmicrohttpd (Debian's is built with GnuTLS for MHD_USE_TLS).
#include <stdarg.h>
#include <stdint.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>

// MHD_get_connection_info is variadic, which Swift cannot call; this typed forwarder is the only code here.
// Every other libmicrohttpd call is in Sources/SecureClearing/HTTPServer.swift.
static inline const struct sockaddr *secure_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}
#endif
