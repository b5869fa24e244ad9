// SPDX-License-Identifier: Apache-2.0
// split_provider: the lazy and fair_use policies as the runtime's stack
// provider (stack/provider.hpp). The segment logic itself is split_stack.cpp.
#include <cstdio>

#include "arch/context.hpp"
#include "split/split_provider.hpp"

namespace ito::sched::split {

split_provider::split_provider(const options& o)
    : fair_use(o.stacks == stack_policy::fair_use),
      segments(o.stack_block_size ? o.stack_block_size : options::default_stack_block_size,
               o.stack_allocator.value_or(stack_alloc::mmap)) {}

// Every worker was drained before: only the blocks' pool is left.
split_provider::~split_provider() { segments.drain(); }

void split_provider::attach(worker* w) { w->stack_state = new split_worker; }

ult* split_provider::allocate(worker* w, std::size_t frame_bytes, void** frame) {
  return split::allocate(w, frame_bytes, frame);
}

void split_provider::finish(ult* self) noexcept { on_finish(self); }

bool split_provider::exited_into_parent(worker* w, ult* self, ult* parent) noexcept {
  return merge_into_parent(w, self, parent);
}

void split_provider::exited(worker* w, ult* self) noexcept { on_exit(w, self); }

void split_provider::release(worker* w, ult* u) noexcept { split::release(w, u); }

void split_provider::parking(worker* w) noexcept { share_pooled(w); }

void split_provider::drain(worker* w) noexcept {
  split::drain(w);
  delete &state(w);
  w->stack_state = nullptr;
}

void split_provider::print_stats(const runtime_state& rt, std::FILE* out) const {
  std::fprintf(out,
               "ito: %s stacks: %zu-byte blocks (%s), peak %zu bytes in stacks, %zu now\n"
               "ito: %6s %12s %12s %12s %12s %12s\n",
               fair_use ? "fair_use" : "lazy", segments.block_size(),
               rt.opts.stack_allocator == stack_alloc::malloc ? "malloc" : "mmap",
               segments.peak_bytes(), segments.live_bytes(), "worker", "on_tail", "seg_alloc",
               "seg_merged", "pool_reused", "hot_reused");
  for (auto& w : rt.workers) {
    const split_stats& s = state(w.get()).stats;
    std::fprintf(out, "ito: %6u %12llu %12llu %12llu %12llu %12llu\n", w->index,
                 static_cast<unsigned long long>(s.lazy_spawns.load()),
                 static_cast<unsigned long long>(s.segments_allocated.load()),
                 static_cast<unsigned long long>(s.segments_merged.load()),
                 static_cast<unsigned long long>(s.segments_pool_reused.load()),
                 static_cast<unsigned long long>(s.segments_hot_reused.load()));
  }
}

}  // namespace ito::sched::split
