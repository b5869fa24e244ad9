// SPDX-License-Identifier: Apache-2.0
// An NSS module with thread-local variables (libnss_itotls.so.2), as
// libnss_systemd is: glibc loads it itself, through its internal dlopen,
// the first time getpwnam asks the "itotls" service (tls_nss.c configures
// that with __nss_configure_lookup), not through the dlopen that the
// preload interposes. It hands its counting functions to the program
// (tls_module_register, which the program exports) from its constructor.
#include <errno.h>
#include <nss.h>
#include <pwd.h>
#include <stddef.h>

__thread long tls_nss_counter;
__thread int tls_nss_touched = 7;  // an initial image each thread must get

static long bump(long by) {
  tls_nss_counter += by;
  return tls_nss_counter;
}
static int initial(void) { return tls_nss_touched; }

extern void tls_module_register(long (*)(long), int (*)(void)) __attribute__((weak));

__attribute__((constructor)) static void hand_over(void) {
  if (tls_module_register) tls_module_register(bump, initial);
}

enum nss_status _nss_itotls_getpwnam_r(const char* name, struct passwd* pw, char* buffer,
                                       size_t length, int* errnop) {
  (void)name, (void)pw, (void)buffer, (void)length;
  *errnop = ENOENT;
  return NSS_STATUS_NOTFOUND;
}
