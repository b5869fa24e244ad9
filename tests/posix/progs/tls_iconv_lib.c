// SPDX-License-Identifier: Apache-2.0
// A gconv module with thread-local variables (ITOTLS.so, named in the
// gconv-modules file next to it, found through GCONV_PATH): glibc loads it
// itself, through its internal dlopen, when iconv_open asks for the
// "ITOTLS//" character set (tls_nss.c built with TLS_VIA_ICONV). It converts
// nothing; it hands its counting functions to the program
// (tls_module_register, which the program exports) from its constructor.
#include <gconv.h>
#include <stddef.h>

__thread long tls_iconv_counter;
__thread int tls_iconv_touched = 7;  // an initial image each thread must get

static long bump(long by) {
  tls_iconv_counter += by;
  return tls_iconv_counter;
}
static int initial(void) { return tls_iconv_touched; }

extern void tls_module_register(long (*)(long), int (*)(void)) __attribute__((weak));

__attribute__((constructor)) static void hand_over(void) {
  if (tls_module_register) tls_module_register(bump, initial);
}

int gconv_init(struct __gconv_step* step) {
  step->__min_needed_from = step->__max_needed_from = 1;
  step->__min_needed_to = step->__max_needed_to = 4;
  step->__stateful = 0;
  return __GCONV_OK;
}

int gconv(struct __gconv_step* step, struct __gconv_step_data* data, const unsigned char** in,
          const unsigned char* end, unsigned char** out, size_t* irreversible, int flush,
          int consume) {
  (void)step, (void)data, (void)in, (void)end, (void)out, (void)irreversible, (void)flush,
      (void)consume;
  return __GCONV_NOCONV;
}
