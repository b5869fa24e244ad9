// SPDX-License-Identifier: Apache-2.0
// ito/dist.h: the C API over ito::dist, error numbers instead of exceptions.
#include "ito/dist.h"

#include <cerrno>
#include <cstdio>
#include <new>

#include "compat/c_errors.hpp"
#include "distributed/api/checkout.hpp"
#include "ito/dist.hpp"
#include "ito/error.hpp"
#include "ito/options.hpp"

namespace {

ito::dist::runtime* g_c_runtime = nullptr;

template <class Call>
int guarded(Call&& call) noexcept {
  try {
    call();
    return 0;
  } catch (...) {
    return ito::compat::code_of_current_exception();
  }
}

}  // namespace

extern "C" {

int ito_dist_init(int* argc, char*** argv, size_t region_bytes) {
  if (g_c_runtime) return EBUSY;
  return guarded([&] {
    ito::dist::options o;
    o.region_bytes = region_bytes;
    g_c_runtime = new ito::dist::runtime(argc, argv, o);
  });
}

int ito_dist_finalize(void) {
  if (!g_c_runtime) return EPERM;
  delete g_c_runtime;
  g_c_runtime = nullptr;
  return 0;
}

int ito_dist_rank(int* rank) {
  if (!rank) return EINVAL;
  return guarded([&] { *rank = ito::dist::rank(); });
}

int ito_dist_size(int* size) {
  if (!size) return EINVAL;
  return guarded([&] { *size = ito::dist::size(); });
}

int ito_dist_node(int* node, int* nodes) {
  if (!node || !nodes) return EINVAL;
  return guarded([&] {
    *node = ito::dist::node();
    *nodes = ito::dist::nodes();
  });
}

int ito_dist_checkout(void* p, size_t bytes, int how) {
  using ito::dist::access;
  access a;
  switch (how) {
    case ITO_DIST_READ: a = access::read; break;
    case ITO_DIST_WRITE: a = access::write; break;
    case ITO_DIST_READ_WRITE: a = access::read_write; break;
    default: return EINVAL;
  }
  if (bytes == 0) return 0;
  return guarded([&] { ito::dist::detail::check_out(p, bytes, a); });
}

int ito_dist_checkin(void* p, size_t bytes) {
  if (bytes == 0) return 0;
  return guarded([&] { ito::dist::detail::check_in_or_throw(p, bytes); });
}

int ito_dist_barrier(void) {
  return guarded([] { ito::dist::barrier(); });
}

int ito_dist_region(void** base, size_t* bytes) {
  if (!base || !bytes) return EINVAL;
  return guarded([&] {
    const ito::dist::region_info r = ito::dist::region();
    *base = r.base;
    *bytes = r.bytes;
  });
}

int ito_dist_alloc(size_t bytes, void** out) {
  if (!out) return EINVAL;
  return guarded([&] { *out = ito::dist::alloc(bytes); });
}

int ito_dist_free(void* p) {
  return guarded([&] { ito::dist::free(p); });
}

int ito_dist_alloc_collective(size_t bytes, void** out) {
  if (!out) return EINVAL;
  return guarded([&] { *out = ito::dist::alloc_collective(bytes); });
}

int ito_dist_alloc_distributed(size_t bytes, int distribution, size_t block_bytes, void** out) {
  using where = ito::dist::distribution;
  if (!out) return EINVAL;
  where d;
  switch (distribution) {
    case ITO_DIST_BLOCK: d = where::block(); break;
    case ITO_DIST_CYCLIC: d = where::cyclic(block_bytes); break;
    case ITO_DIST_FIRST_TOUCH: d = where::first_touch(); break;
    default: return EINVAL;
  }
  return guarded([&] { *out = ito::dist::alloc_collective(bytes, d); });
}

int ito_dist_sd_fence(void) {
  return guarded([] { ito::dist::sd_fence(); });
}

int ito_dist_si_fence(void) {
  return guarded([] { ito::dist::si_fence(); });
}

int ito_dist_sd_fence_async(void (*done)(void*), void* arg) {
  return guarded([&] { ito::dist::sd_fence_async([=] { if (done) done(arg); }); });
}

int ito_dist_si_fence_async(void (*done)(void*), void* arg) {
  return guarded([&] { ito::dist::si_fence_async([=] { if (done) done(arg); }); });
}

int ito_dist_pin(void* p, size_t bytes) {
  return guarded([&] { ito::dist::pin(p, bytes); });
}

int ito_dist_unpin(void* p, size_t bytes) {
  return guarded([&] { ito::dist::unpin(p, bytes); });
}

}  // extern "C"
