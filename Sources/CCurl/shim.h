#ifndef SECURE_CCURL_SHIM_H
#define SECURE_CCURL_SHIM_H
// The wallet's client of the clearing: libcurl (OpenSSL flavour), with a pinned TLS key.
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these typed forwarders are the
// only code here. Every other libcurl call is in Sources/SecureSync/HTTPClient.swift.
static inline CURLcode secure_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode secure_curl_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode secure_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode secure_curl_setopt_write(CURL *handle,
                                                size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
static inline CURLcode secure_curl_setopt_xferinfo(CURL *handle,
                                                   int (*callback)(void *, curl_off_t, curl_off_t, curl_off_t,
                                                                   curl_off_t)) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}
static inline CURLcode secure_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode secure_curl_getinfo_pointer(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}
#endif
