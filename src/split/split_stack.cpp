// SPDX-License-Identifier: Apache-2.0
// The lazy and fair_use policies. A ULT's stack is a chain of segments; the
// limit word at %fs:0x70 is the lowest address its split-stack code may use
// (`backoff` more lie below it for __morestack). Descriptors are small heap
// chunks recycled per worker, so a child's stack region is free the moment the
// child has switched away, even before it is joined.
//
// A child placed on its parent's tail lies right below the parent's raised
// limit; whoever's limit sits on a region record owns it and merges it back
// once the child ended (at once when the owner is the context resumed next:
// the fib fast path). An owner that leaves the segment orphans the records
// below it; fair_use pools an ended child's region that its owner could not
// take back at once, for any ULT to use as its next segment.
#include "split/split_stack.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "arch/context.hpp"
#include "sched/registry.hpp"
#include "sched/scheduler.hpp"
#include "split/split_provider.hpp"

namespace ito::sched::split {
namespace {

using stack::region;
using stack::segment_pool;

char* limit_now() noexcept { return static_cast<char*>(arch::split_limit()); }

bool fair_use(worker* w) noexcept { return provider(w).fair_use; }

constexpr std::size_t chunk_bytes = descriptor_bytes + split_ult_bytes + inline_frame_bytes;

// Takes entry i out of the worker's block cache, keeping the order (oldest
// first). A plain loop, kept one by the barrier: gcc would make a memmove call
// of it, a call into non-split code that __morestack's path must not make
// (docs/SPLIT_STACKS.md, "What a call into non-split code costs").
void remove_cached(worker* w, unsigned i) noexcept {
  for (unsigned j = i + 1; j < state(w).free_block_count; ++j) {
    state(w).free_blocks[j - 1] = state(w).free_blocks[j];
    asm volatile("" ::: "memory");
  }
  --state(w).free_block_count;
}

// Drops a reference; a block nobody uses any more goes to this worker's cache
// (unmapping costs a TLB shootdown on every CPU of the process, remapping
// costs page faults), the oldest cached block out if the cache is full.
void unref(worker* w, stack::segment_block* b) noexcept {
  segment_pool& pool = provider(w).segments;
  if (!segment_pool::drop(b)) return;
  const std::size_t budget = std::max(pool.block_size(), std::size_t{8} << 20);
  while (state(w).free_block_count &&
         (state(w).free_block_count == split_worker::max_free_blocks || state(w).free_block_bytes + b->bytes > budget)) {
    stack::segment_block* oldest = state(w).free_blocks[0];
    state(w).free_block_bytes -= oldest->bytes;
    remove_cached(w, 0);
    pool.destroy(oldest);
  }
  if (b->bytes > budget) {
    pool.destroy(b);
    return;
  }
  state(w).free_blocks[state(w).free_block_count++] = b;
  state(w).free_block_bytes += b->bytes;
}

// A cached block with room for `need`, newest first.
stack::segment_block* cached_block(worker* w, std::size_t need) noexcept {
  for (unsigned i = state(w).free_block_count; i-- > 0;) {
    stack::segment_block* b = state(w).free_blocks[i];
    if (b->bytes >= need + stack::segment_block::header_bytes) {
      remove_cached(w, i);
      state(w).free_block_bytes -= b->bytes;
      return b;
    }
  }
  return nullptr;
}

// Moves the `count` oldest regions of the worker's part of the pool to `out`.
// Calls nothing: the part is consistent again before its caller calls into
// the shared pool, whose prologue may run __morestack, which takes a region
// from the part (and the way back through ito_split_shrink may put one).
void take_oldest_pooled(split_worker& sw, unsigned count, region* out) noexcept {
  const unsigned n = sw.pooled_count.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < n; ++i) {
    if (i < count) out[i] = sw.pooled[i];
    else sw.pooled[i - count] = sw.pooled[i];
    asm volatile("" ::: "memory");  // no memcpy/memmove call (see remove_cached)
  }
  sw.pooled_count.store(n - count, std::memory_order_relaxed);
}

// fair_use: a freed region goes to this worker's part of the pool. A full part
// gives its older half to the shared pool under one lock, so that the lock is
// taken once per max_pooled / 2 regions that leave the worker, not per spawn:
// on 16 workers a fib whose every spawn went through the shared pool's lock
// ran 10-17 times slower than lazy (BENCHMARKS.md, "fair_use on 16 workers").
void pool_region(worker* w, region r) noexcept {
  split_worker& sw = state(w);
  while (sw.pooled_count.load(std::memory_order_relaxed) == split_worker::max_pooled) {
    constexpr unsigned half = split_worker::max_pooled / 2;
    region spilled[half];
    take_oldest_pooled(sw, half, spilled);
    provider(w).segments.put(spilled, half);  // may change the part: look again
  }
  const unsigned n = sw.pooled_count.load(std::memory_order_relaxed);
  sw.pooled[n] = r;
  sw.pooled_count.store(n + 1, std::memory_order_relaxed);
}

// A region nobody uses now: fair_use pools it for any ULT, unless it is a whole
// block (the worker's block cache serves any size); lazy drops it.
void give_away(worker* w, region r) noexcept {
  bool whole = r.lo == r.block->usable_lo() && r.hi == r.block->end();
  if (fair_use(w) && !whole) pool_region(w, r);
  else unref(w, r.block);
}

// Gives a segment this worker no longer runs on to the hot-split cache; the
// one cached before is given away.
void give_segment(worker* w, region r) noexcept {
  if (region old = state(w).hot_segment) give_away(w, old);
  state(w).hot_segment = r;
}

// A segment its user leaves. While children still hold regions below its
// limit, only the part above that limit can be used again.
region rest_of(region seg, bool lent_below, void* limit) noexcept {
  if (lent_below) seg.lo = static_cast<char*>(limit) - backoff;
  return seg;
}

// fair_use: a region from the pool of freed ones, this worker's part first
// (newest first: warm), then the shared pool.
region take_pooled(worker* w, std::size_t need) {
  if (!fair_use(w)) return {};
  split_worker& sw = state(w);
  const unsigned n = sw.pooled_count.load(std::memory_order_relaxed);
  for (unsigned i = n; i-- > 0;) {
    if (sw.pooled[i].size() < need) continue;
    region r = sw.pooled[i];
    for (unsigned j = i + 1; j < n; ++j) {
      sw.pooled[j - 1] = sw.pooled[j];
      asm volatile("" ::: "memory");  // no memmove call (see remove_cached)
    }
    sw.pooled_count.store(n - 1, std::memory_order_relaxed);
    worker_stats::bump(sw.stats.segments_pool_reused);
    return r;
  }
  if (provider(w).segments.maybe_has_regions()) {
    if (region r = provider(w).segments.take(need)) {
      worker_stats::bump(sw.stats.segments_pool_reused);
      return r;
    }
  }
  return {};
}

region take_segment(worker* w, std::size_t need) {
  if (region r = state(w).hot_segment; r && r.size() >= need) {
    state(w).hot_segment = {};
    worker_stats::bump(state(w).stats.segments_hot_reused);
    return r;
  }
  if (region r = take_pooled(w, need)) return r;
  segment_pool& pool = provider(w).segments;
  if (stack::segment_block* b = cached_block(w, need)) {
    b->refs.store(1, std::memory_order_relaxed);
    worker_stats::bump(state(w).stats.segments_hot_reused);
    return {b, b->usable_lo(), b->end()};
  }
  worker_stats::bump(state(w).stats.segments_allocated);
  return pool.new_block(need);
}

[[gnu::noinline]] void give_deferred(worker* w) noexcept {
  region r = state(w).deferred_segment;
  state(w).deferred_segment = {};
  give_segment(w, r);
}

// A segment an exception left (ito_split_unwind) is given back at the next
// split-stack call of its worker.
inline void flush_deferred(worker* w) noexcept {
  if (state(w).deferred_segment) [[unlikely]] give_deferred(w);
}

// libc calls stay out of the hot functions: in libito's split-stack build a
// small-frame function that calls non-split code pays ~8 ns on every call.
[[gnu::noinline]] void free_allocas(void* list) noexcept {
  while (list) {
    void* next = *static_cast<void**>(list);
    std::free(list);
    list = next;
  }
}

// Lowers the owner's limit over every ended child right below it; the caller
// stores the new limit in the live word.
bool merge_free(worker* w, ult* owner, char*& limit) noexcept {
  bool merged = false;
  while (lent_region* c = ext(owner)->lent) {
    if (c->state.load(std::memory_order_acquire) != region_state::free) break;
    ext(owner)->lent = c->final_lent;
    limit = static_cast<char*>(c->final_limit);
    worker_stats::bump(state(w).stats.segments_merged);
    merged = true;
  }
  return merged;
}

// The ended ULT self's region lies right below its owner's limit: the owner
// takes it back, with the regions self had lent and any ended ones below.
// Returns the owner's new limit; the caller stores it (live or saved).
char* give_region_back(worker* w, ult* self, ult* owner) noexcept {
  ext(owner)->lent = ext(self)->final_lent;
  auto* limit = static_cast<char*>(ext(self)->final_limit);
  if (ext(owner)->lent) merge_free(w, owner, limit);
  worker_stats::bump(state(w).stats.segments_merged);
  return limit;
}

// The owner leaves the segment holding the chain `c`: nobody will merge it now.
void orphan(worker* w, lent_region* c) noexcept {
  while (c) {
    region_state s = c->state.load(std::memory_order_acquire);
    if (s == region_state::in_use) {
      segment_pool::ref(c->block);  // the child frees its region itself now
      if (c->state.compare_exchange_strong(s, region_state::orphaned, std::memory_order_acq_rel))
        return;
      unref(w, c->block);  // it ended meanwhile: look again
      continue;
    }
    if (s != region_state::free) return;  // pooled: its child took care of the rest
    c = c->final_lent;  // ended, never merged: the regions below it are ours too
  }
}

// The caller stores rec->prev_limit in the live word when it is done.
// Returns the part of the segment that can be used again (see rest_of).
region leave_segment(worker* w, ult* u, ito::sched::split_frame* rec, void* seg_limit) noexcept {
  bool lent_below = ext(u)->lent != nullptr;
  orphan(w, ext(u)->lent);
  ext(u)->lent = rec->prev_lent;
  ext(u)->cur_block = rec->prev_block;
  ext(u)->frames = rec->prev_frame;
  if (rec->allocas) [[unlikely]] free_allocas(rec->allocas);
  return rest_of(rec->segment, lent_below, seg_limit);
}

[[gnu::noinline]] ult* new_chunk(std::size_t frame_bytes) {
  std::size_t bytes = frame_bytes <= inline_frame_bytes ? chunk_bytes
                                                        : chunk_bytes - inline_frame_bytes + frame_bytes;
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  ult* u = new (p) ult;
  new (ext(u)) split_ult;
  u->stack_from = stack_origin::provided;
  u->record_floor = 0;  // its segments grow: records run as calls anywhere
  ext(u)->big_chunk = frame_bytes > inline_frame_bytes;
  registry_add(current_worker(), u);
  return u;
}

[[gnu::noinline]] void free_chunk(ult* u) noexcept {
  registry_remove(u);
  ext(u)->~split_ult();
  u->~ult();
  std::free(u);
}

ult* new_descriptor(worker* w, std::size_t frame_bytes) {
  split_worker& sw = state(w);
  ult* u = sw.free_chunks;
  if (frame_bytes <= inline_frame_bytes && u) [[likely]] {
    sw.free_chunks = u->next;
    --sw.free_chunk_count;
    u->next = nullptr;
    worker_stats::bump(w->stats.stacks_reused);
    return u;
  }
  return new_chunk(frame_bytes);
}

// fork starts the child at `top` with ito_context_start_split, which loads
// the child's limit word from there before anything runs on the new stack (a
// child queued help-first gets it in its made context: make_startable).
void start_stack_at(ult* u, char* top, void* limit) noexcept {
  *reinterpret_cast<void**>(top) = limit;
  u->sp = top;
}

// A child on a segment of its own (not on its parent's tail).
ult* start_on_segment(ult* u, region r) noexcept {
  ext(u)->region = nullptr;
  ext(u)->root = r;
  ext(u)->lent = nullptr;
  ext(u)->cur_block = r.block;
  start_stack_at(u, reinterpret_cast<char*>(reinterpret_cast<std::uintptr_t>(r.hi) & ~std::uintptr_t{63}) - 64,
                 r.lo + backoff);
  return u;
}

}  // namespace

ult* allocate(worker* w, std::size_t frame_bytes, void** frame) {
  flush_deferred(w);
  ult* u = new_descriptor(w, frame_bytes);
  renew(w, u);
  u->frame = *frame = reinterpret_cast<char*>(u) + descriptor_bytes + split_ult_bytes;
  ext(u)->frames = nullptr;
  ext(u)->allocas = nullptr;

  // fair_use: a child takes a pooled region before its parent's tail. On the
  // tail it would pin the parent's margin (12 KiB) and the segment below it for
  // as long as it lives, and a parent that grows meanwhile leaves that segment
  // for a new one; a region already freed costs nothing new (chain, listing
  // 4.2). With none pooled (fib: children merge back at quick resume), the
  // tail it is, exactly as under lazy.
  constexpr std::size_t own_segment_need = min_child_room + backoff + 64;
  if (region r = take_pooled(w, own_segment_need)) [[unlikely]] return start_on_segment(u, r);
  ult* parent = w->current;
  char* limit = limit_now();
  if (parent && limit) {  // the parent runs on a segment (not the main ULT's OS stack)
    if (ext(parent)->lent && merge_free(w, parent, limit)) [[unlikely]] arch::set_split_limit(limit);
    auto sp = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    std::uintptr_t top = (sp - lazy_margin) & ~std::uintptr_t{63};
    std::uintptr_t rec = top - sizeof(lent_region);
    if (rec >= reinterpret_cast<std::uintptr_t>(limit) + min_child_room) [[likely]] {
      auto* r = new (reinterpret_cast<void*>(rec)) lent_region;
      r->block = ext(parent)->cur_block;
      ext(u)->region = r;
      ext(u)->root = {};
      ext(u)->lent = ext(parent)->lent;
      ext(u)->cur_block = ext(parent)->cur_block;
      start_stack_at(u, reinterpret_cast<char*>(r) - 16, limit);
      ext(parent)->lent = r;
      // The parent keeps what lies above the record; its saved context gets this.
      arch::set_split_limit(reinterpret_cast<char*>(top) + backoff);
      worker_stats::bump(state(w).stats.lazy_spawns);
      return u;
    }
  }
  return start_on_segment(u, take_segment(w, own_segment_need));
}

void on_finish(ult* self) noexcept {
  ext(self)->final_limit = limit_now();
  ext(self)->final_lent = ext(self)->lent;
  if (ext(self)->allocas) [[unlikely]] {
    free_allocas(ext(self)->allocas);
    ext(self)->allocas = nullptr;
  }
}

void on_exit(worker* w, ult* self) noexcept {
  flush_deferred(w);
  lent_region* r = ext(self)->region;
  if (!r) {
    orphan(w, ext(self)->final_lent);
    // fair_use pools a ULT's own segment at once, for the next child to find
    // (the hot slot is for __morestack's segments: the hot-split case).
    region rest = rest_of(ext(self)->root, ext(self)->final_lent != nullptr, ext(self)->final_limit);
    if (fair_use(w)) give_away(w, rest);
    else give_segment(w, rest);
    return;
  }
  ult* running = w->current;
  if (running && ext(running)->lent == r) [[likely]] {
    // Its owner is the context resumed now (its limit word is live): give the
    // region straight back.
    arch::set_split_limit(give_region_back(w, self, running));
    return;
  }
  r->final_limit = ext(self)->final_limit;
  r->final_lent = ext(self)->final_lent;
  if (fair_use(w)) {
    // The owner may still read the record: pool what lies below it.
    region_state old = r->state.exchange(region_state::pooled, std::memory_order_acq_rel);
    if (old == region_state::in_use) segment_pool::ref(r->block);  // orphaned: we hold one already
    orphan(w, r->final_lent);
    char* lo = static_cast<char*>(r->final_limit) - backoff;
    char* hi = reinterpret_cast<char*>(r);
    if (hi - lo >= static_cast<std::ptrdiff_t>(min_child_room + 2 * backoff))
      pool_region(w, {r->block, lo, hi});
    else
      unref(w, r->block);
    return;
  }
  region_state expected = region_state::in_use;
  if (r->state.compare_exchange_strong(expected, region_state::free, std::memory_order_acq_rel))
    return;  // its owner merges it when it next needs the room
  orphan(w, r->final_lent);  // orphaned: the owner left, and gave us a reference
  unref(w, r->block);
}

bool merge_into_parent(worker* w, ult* self, ult* parent) noexcept {
  lent_region* r = ext(self)->region;
  if (!r || ext(parent)->lent != r) [[unlikely]] return false;
  arch::set_saved_split_limit(parent->sp, give_region_back(w, self, parent));
  return true;
}

void release(worker* w, ult* u) noexcept {
  if (!ext(u)->big_chunk && w && state(w).free_chunk_count < split_worker::max_free_chunks) [[likely]] {
    split_worker& sw = state(w);
    u->next = sw.free_chunks;
    sw.free_chunks = u;
    ++sw.free_chunk_count;
    return;
  }
  free_chunk(u);
}

void share_pooled(worker* w) noexcept {
  split_worker& sw = state(w);
  while (unsigned n = sw.pooled_count.load(std::memory_order_relaxed)) {
    region all[split_worker::max_pooled];
    take_oldest_pooled(sw, n, all);
    provider(w).segments.put(all, n);
  }
}

void drain(worker* w) noexcept {
  flush_deferred(w);
  share_pooled(w);  // the provider's destructor drains the shared pool
  if (region r = state(w).hot_segment) {
    state(w).hot_segment = {};
    provider(w).segments.unref(r.block);
  }
  split_worker& sw = state(w);
  while (sw.free_block_count) provider(w).segments.destroy(sw.free_blocks[--sw.free_block_count]);
  sw.free_block_bytes = 0;
  while (ult* u = sw.free_chunks) {
    sw.free_chunks = u->next;
    free_chunk(u);
  }
  sw.free_chunk_count = 0;
}

ult* current_split_ult(const char* what) noexcept {
  worker* w = current_worker();
  ult* u = w ? w->current : nullptr;
  if (!u || !u->from_provider()) fatal(what);  // a thread that is no lazy/fair_use ULT has a limit set
  return u;
}

}  // namespace ito::sched::split

using ito::sched::split_frame;
namespace split = ito::sched::split;

// The three entry points below run on the old stack, below its limit:
// __morestack stored the live limit in rec->prev_limit and zeroed the word, so
// that split-stack copies of inline functions (COMDAT, shared with split code)
// called from here never recurse into __morestack. Each stores the limit for
// the stack it returns to as its very last step.
extern "C" void* ito_split_grow(split_frame* rec, std::size_t frame_bytes, const char* args,
                                std::size_t arg_bytes, char* sp) noexcept {
  using namespace ito::sched;
  ult* u = split::current_split_ult(
      "__morestack: split-stack code ran out of stack outside a lazy/fair_use ULT");
  worker* w = current_worker();
  split::flush_deferred(w);
  auto* limit = static_cast<char*>(rec->prev_limit);
  // First take back ended children's regions right below the limit.
  if (split::ext(u)->lent && split::merge_free(w, u, limit) &&
      sp >= limit + frame_bytes + split::adjust_size + 256) {
    ito::arch::set_split_limit(limit);
    return nullptr;  // it fits now: run on the current segment
  }
  std::size_t need = frame_bytes + arg_bytes + split::adjust_size + split::backoff + 1024;
  ito::stack::region r = split::take_segment(w, need);
  rec->prev_limit = limit;
  rec->prev_lent = split::ext(u)->lent;
  rec->prev_block = split::ext(u)->cur_block;
  rec->prev_frame = split::ext(u)->frames;
  rec->segment = r;
  rec->allocas = nullptr;
  split::ext(u)->lent = nullptr;
  split::ext(u)->cur_block = r.block;
  split::ext(u)->frames = rec;
  char* new_sp = reinterpret_cast<char*>(
      (reinterpret_cast<std::uintptr_t>(r.hi) - arg_bytes) & ~std::uintptr_t{15});
  // Stack arguments: whole words. A loop, not memcpy (see remove_cached).
  for (std::size_t i = 0; i < arg_bytes / 8; ++i) {
    reinterpret_cast<std::uint64_t*>(new_sp)[i] = reinterpret_cast<const std::uint64_t*>(args)[i];
    asm volatile("" ::: "memory");
  }
  ito::arch::set_split_limit(r.lo + split::backoff);
  return new_sp;
}

extern "C" void ito_split_shrink(split_frame* rec, void* seg_limit) noexcept {
  using namespace ito::sched;
  worker* w = current_worker();
  void* limit = rec->prev_limit;
  split::give_segment(w, split::leave_segment(w, w->current, rec, seg_limit));
  ito::arch::set_split_limit(limit);
}

// An exception leaves the segment: _Unwind_Resume still runs on it, so it is
// given back at this worker's next split-stack call instead of now.
extern "C" void ito_split_unwind(split_frame* rec, void* seg_limit) noexcept {
  using namespace ito::sched;
  worker* w = current_worker();
  void* limit = rec->prev_limit;
  ito::stack::region rest = split::leave_segment(w, w->current, rec, seg_limit);
  split::flush_deferred(w);
  split::state(w).deferred_segment = rest;
  ito::arch::set_split_limit(limit);
}

// alloca / variable-length arrays that do not fit below the limit: a heap
// block freed with the segment (or the ULT) it was made on.
extern "C" void* ito_split_alloca(std::size_t bytes) noexcept {
  using namespace ito::sched;
  ult* u = split::current_split_ult("__morestack_allocate_stack_space outside a lazy/fair_use ULT");
  void** list = split::ext(u)->frames ? &split::ext(u)->frames->allocas : &split::ext(u)->allocas;
  auto* block = static_cast<void**>(std::malloc(bytes + 16));
  if (!block) fatal("out of memory in __morestack_allocate_stack_space");
  *block = *list;
  *list = block;
  return reinterpret_cast<char*>(block) + 16;
}
