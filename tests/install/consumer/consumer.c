/* SPDX-License-Identifier: Apache-2.0 */
/* Uses the installed C header and library. */
#include <stdint.h>
#include <stdio.h>

#include "ito/ito.h"

static void* twice(void* arg) { return (void*)((intptr_t)arg * 2); }

int main(void) {
  ito_options_t opts = ITO_OPTIONS_INIT;
  opts.workers = 2;
  if (ito_init(&opts) != 0) return 1;
  ito_ult_t t;
  void* r = NULL;
  if (ito_create(&t, twice, (void*)21) != 0 || ito_join(t, &r) != 0 || (intptr_t)r != 42) {
    printf("consumer: got %ld\n", (long)(intptr_t)r);
    return 1;
  }
  if (ito_finalize() != 0) return 1;
  printf("consumer: ok\n");
  return 0;
}
