// SPDX-License-Identifier: Apache-2.0
// A module with thread-local variables of its own, loaded by dlopen after
// threads exist: its __thread variables are dynamic TLS (__tls_get_addr).
__thread long tls_dlopen_counter;
__thread int tls_dlopen_touched = 7;  // an initial image each thread must get

long tls_dlopen_bump(long by) {
  tls_dlopen_counter += by;
  return tls_dlopen_counter;
}
int tls_dlopen_initial(void) { return tls_dlopen_touched; }
