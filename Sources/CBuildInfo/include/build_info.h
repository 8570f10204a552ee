#ifndef SECURE_BUILD_INFO_H
#define SECURE_BUILD_INFO_H
// The commit a binary was built from. scripts/install and scripts/package-deb pass it with
// -Xcc -DSECURE_COMMIT="\"<hash>\""; any other build says "unknown". Swift cannot take a string from a
// -D flag, hence this header.
#ifndef SECURE_COMMIT
#define SECURE_COMMIT "unknown"
#endif

static inline const char *secure_build_commit(void) { return SECURE_COMMIT; }
#endif
