/* SPDX-License-Identifier: Apache-2.0 */
/* A C consumer of the installed ito::dist (ito/dist.h): one rank, a singleton
 * MPI process without mpiexec, starts the distributed runtime, sees its region
 * and keeps a global in the DSM (which needs the installed linker script). */
#include <stdio.h>

#include "ito/dist.h"

ITO_DSM_GLOBAL int g_shared_counter = 41;

int main(int argc, char** argv) {
  int rc = ito_dist_init(&argc, &argv, (size_t)1 << 30);
  if (rc != 0) {
    printf("consumer: ito_dist_init returned %d\n", rc);
    return 1;
  }
  int rank = -1, size = -1;
  void* base = NULL;
  size_t bytes = 0;
  ++g_shared_counter;
  const int ok = ito_dist_rank(&rank) == 0 && ito_dist_size(&size) == 0 &&
                 ito_dist_region(&base, &bytes) == 0 && ito_dist_barrier() == 0 && base != NULL &&
                 rank == 0 && size == 1 && g_shared_counter == 42;
  printf("consumer: %s (rank %d of %d, region %zu bytes, global %d)\n", ok ? "ok" : "wrong", rank,
         size, bytes, g_shared_counter);
  if (ito_dist_finalize() != 0) return 1;
  return ok ? 0 : 1;
}
