/* SPDX-License-Identifier: Apache-2.0 */
/* ito's distributed mode from C (see ito/dist.hpp). Every function returns 0
 * or a positive error number: EPERM outside a distributed runtime, EBUSY for a
 * second one, EINVAL for bad options (the reason on stderr). */
#ifndef ITO_DIST_H
#define ITO_DIST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* region_bytes 0: ITO_DSM_SIZE, else 64 GiB. */
int ito_dist_init(int* argc, char*** argv, size_t region_bytes);
int ito_dist_finalize(void);
int ito_dist_rank(int* rank);
int ito_dist_size(int* size);
/* This rank's node and the number of nodes (ranks mapping one copy of memory). */
int ito_dist_node(int* node, int* nodes);
int ito_dist_barrier(void);
int ito_dist_region(void** base, size_t* bytes);

/* The DSM (ito/dist.hpp): alloc from this rank's heap (ENOMEM when it is
 * full), free from any rank (EINVAL for what alloc did not return, or a
 * second free on the owner's rank), alloc_collective on every rank alike
 * (EINVAL if the sizes differ; EPERM inside start_main_thread's function), the
 * fences, their asynchronous forms (done(arg) runs on a pool thread once the
 * fence is complete), and pin/unpin (EINVAL outside the region, or unpin of a
 * page not pinned). */
/* A global or static variable in the DSM (see ito/dist.hpp): */
#ifndef ITO_DSM_GLOBAL
#define ITO_DSM_GLOBAL __attribute__((section("ito_dsm"), used))
#endif
int ito_dist_alloc(size_t bytes, void** out);
int ito_dist_free(void* p);
int ito_dist_alloc_collective(size_t bytes, void** out);
/* alloc_collective with a distribution of the pages' homes (ito/dist.hpp):
 * ITO_DIST_BLOCK (what ito_dist_alloc_collective does), ITO_DIST_CYCLIC with
 * block_bytes > 0, or ITO_DIST_FIRST_TOUCH; EINVAL for another value. */
enum { ITO_DIST_BLOCK = 0, ITO_DIST_CYCLIC = 1, ITO_DIST_FIRST_TOUCH = 2 };
int ito_dist_alloc_distributed(size_t bytes, int distribution, size_t block_bytes, void** out);
/* ito::dist::checkout as two calls: the range's pages brought in (one
 * transfer per run homed on one node) and kept accessible until the matching
 * checkin. ITO_DIST_WRITE promises every byte is written before the checkin.
 * 0 bytes: nothing. EINVAL for a range outside the region, an unknown access
 * or a checkin of what is not checked out; EPERM without a runtime. */
enum { ITO_DIST_READ = 0, ITO_DIST_WRITE = 1, ITO_DIST_READ_WRITE = 2 };
int ito_dist_checkout(void* p, size_t bytes, int access);
int ito_dist_checkin(void* p, size_t bytes);
/* The DSM's fences (ito::dist::release and acquire), and the same without
 * waiting. The sd_fence/si_fence spellings are the paper's names for the same
 * calls (self-downgrade: release; self-invalidate: acquire), not deprecated. */
int ito_dist_sd_fence(void);
int ito_dist_si_fence(void);
int ito_dist_sd_fence_async(void (*done)(void* arg), void* arg);
int ito_dist_si_fence_async(void (*done)(void* arg), void* arg);
static inline int ito_dist_release(void) { return ito_dist_sd_fence(); }
static inline int ito_dist_acquire(void) { return ito_dist_si_fence(); }
static inline int ito_dist_release_async(void (*done)(void* arg), void* arg) {
  return ito_dist_sd_fence_async(done, arg);
}
static inline int ito_dist_acquire_async(void (*done)(void* arg), void* arg) {
  return ito_dist_si_fence_async(done, arg);
}
int ito_dist_pin(void* p, size_t bytes);
int ito_dist_unpin(void* p, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
