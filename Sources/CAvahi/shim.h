#ifndef SECURE_CAVAHI_SHIM_H
#define SECURE_CAVAHI_SHIM_H
// DNS-SD through the system's Avahi daemon (over D-Bus): announce and browse `_secure-pay._tcp`.
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/address.h>
#include <avahi-common/error.h>
#include <avahi-common/simple-watch.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>
#endif
