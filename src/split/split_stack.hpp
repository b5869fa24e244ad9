// SPDX-License-Identifier: Apache-2.0
// The lazy and fair_use stack policies: ULTs on linked split-stack segments
// (gcc -fsplit-stack), children placed on their parent's unused segment tail,
// and the C side of ito's own __morestack (src/split/morestack/). The
// scheduler reaches it only through split_provider (stack/provider.hpp).
// docs/SPLIT_STACKS.md.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "sched/ult.hpp"
#include "sched/worker.hpp"
#include "split/segment_pool.hpp"

namespace ito::sched {

struct split_frame;

// The record at the top of a child's region on its parent's segment tail.
// The ULT whose limit sits right above it (its "owner") may merge the region
// back once the child has ended; it outlives the child's descriptor.
enum class region_state : std::uint8_t {
  in_use,    // the child has not ended yet
  free,      // ended; the owner merges it when it needs the room (lazy)
  orphaned,  // the owner left that segment; the child frees it when it ends
  pooled,    // ended and given to fair_use's pool; the owner must stop there
};
struct alignas(64) lent_region {
  std::atomic<region_state> state{region_state::in_use};
  void* final_limit = nullptr;        // the child's limit word when it ended
  lent_region* final_lent = nullptr;  // the regions it had lent, below that limit
  stack::segment_block* block = nullptr;
};

// What __morestack (src/split/morestack/morestack_x86_64.S) keeps in its
// frame on the old stack: everything needed to go back when the new segment
// is left.
struct split_frame {
  void* prev_limit;
  lent_region* prev_lent;
  stack::segment_block* prev_block;
  split_frame* prev_frame;
  stack::region segment;
  void* allocas;  // alloca blocks made while this segment was the current one
};
static_assert(sizeof(split_frame) == 64, "morestack_x86_64.S reserves 64 bytes for it");

namespace split {

// Non-split code (libc, libito) called from split code only gets this much
// stack: gold/lld enlarge the caller's check by it. Must equal the
// --split-stack-adjust-size the ito::split_stack target links with.
inline constexpr std::size_t adjust_size = 8192;
// Room below a segment's limit word for __morestack and the C code it calls.
inline constexpr std::size_t backoff = 4096;
// A lazy child starts this far below its parent's sp: the parent's frames that
// already passed their prologue check may still call non-split code.
inline constexpr std::size_t lazy_margin = adjust_size + backoff;
// A child placed on its parent's tail needs at least this much above its limit.
inline constexpr std::size_t min_child_room = adjust_size + 1024;

// Frames up to this size live in the recycled descriptor chunk.
inline constexpr std::size_t inline_frame_bytes = 512;

// A ULT's split-stack state, in its descriptor's chunk right after the
// descriptor (so the fixed policy's descriptor carries none of it). The
// chunk: descriptor, this record, then the frame.
struct split_ult {
  bool big_chunk = false;           // frame too large for a recycled chunk
  lent_region* region = nullptr;    // its record when it runs on a parent's tail
  void* final_limit = nullptr;      // ... and the one it had when it ended
  lent_region* lent = nullptr;      // the region right below its limit
  lent_region* final_lent = nullptr;  // `lent` when it ended
  stack::segment_block* cur_block = nullptr;  // block of its current segment
  stack::region root;               // its own segment when not on a parent's tail
  split_frame* frames = nullptr;    // innermost __morestack record
  void* allocas = nullptr;          // alloca blocks made on its first segment
};
inline constexpr std::size_t descriptor_bytes = (sizeof(ult) + 63) / 64 * 64;
inline constexpr std::size_t split_ult_bytes = (sizeof(split_ult) + 63) / 64 * 64;
inline split_ult* ext(ult* u) noexcept {
  return reinterpret_cast<split_ult*>(reinterpret_cast<char*>(u) + descriptor_bytes);
}

// Counters written only by their worker; read at exit (ITO_STATS=1) and by tests.
struct split_stats {
  std::atomic<std::uint64_t> lazy_spawns{0};           // child placed on its parent's tail
  std::atomic<std::uint64_t> segments_allocated{0};    // fresh blocks
  std::atomic<std::uint64_t> segments_merged{0};       // child regions given back to their owner
  std::atomic<std::uint64_t> segments_pool_reused{0};  // regions taken from fair_use's pool (either part)
  std::atomic<std::uint64_t> segments_hot_reused{0};   // the worker's last freed segment reused
};

// A worker's split-stack state (worker::stack_state).
struct split_worker {
  // The last segment this worker freed (hot-split cache), and one abandoned
  // by an exception, freed once the unwinder has left it.
  stack::region hot_segment;
  stack::region deferred_segment;
  static constexpr unsigned max_free_blocks = 16;  // unused blocks, oldest first
  stack::segment_block* free_blocks[max_free_blocks] = {};
  unsigned free_block_count = 0;
  std::size_t free_block_bytes = 0;
  // Released descriptor chunks, reused first (LIFO: warm lines).
  static constexpr unsigned max_free_chunks = 64;
  ult* free_chunks = nullptr;
  unsigned free_chunk_count = 0;
  // fair_use: this worker's part of the pool of freed regions, oldest first.
  // Its ULTs put and take here without a lock; a full part spills its older
  // half to the shared pool, and a worker about to park gives it all there.
  static constexpr unsigned max_pooled = 8;
  stack::region pooled[max_pooled] = {};
  std::atomic<unsigned> pooled_count{0};  // written by its worker only; read by pooled_regions()
  split_stats stats;
};
inline split_worker& state(worker* w) noexcept { return *static_cast<split_worker*>(w->stack_state); }

// What split_provider's members do (split_stack.cpp).
// A descriptor, a frame and a stack for a new ULT; the stack on the parent's
// tail when it fits. No lock or system call when the worker's caches serve.
ult* allocate(worker* w, std::size_t frame_bytes, void** frame);
// On the ULT's own stack, when its body has returned.
void on_finish(ult* self) noexcept;
// On the next context's stack, once nobody runs on the ended ULT's stack: its
// region is merged into its running owner, left to the owner, pooled or freed.
void on_exit(worker* w, ult* self) noexcept;
// The quick resume's on_exit, before the switch: when the ULT ran on its
// parent's tail and the parent (resumed next, not run since the fork) still
// owns the region, gives it back by lowering the limit in the parent's saved
// context. False when that is not the case: on_exit then does the rest.
bool merge_into_parent(worker* w, ult* self, ult* parent) noexcept;
// Recycles the descriptor (after join or detach).
void release(worker* w, ult* u) noexcept;
// Frees what the worker caches (at runtime stop, after every ULT ended).
void drain(worker* w) noexcept;
// fair_use: the worker is about to park; its pooled regions go to the shared
// pool, for the workers still running.
void share_pooled(worker* w) noexcept;

}  // namespace split
}  // namespace ito::sched

// Called from the split-stack runtime's assembly (src/split/morestack/).
extern "C" {
void* ito_split_grow(ito::sched::split_frame* record, std::size_t frame_bytes, const char* args,
                     std::size_t arg_bytes, char* sp) noexcept;
void ito_split_shrink(ito::sched::split_frame* record, void* limit) noexcept;
void ito_split_unwind(ito::sched::split_frame* record, void* limit) noexcept;
void* ito_split_alloca(std::size_t bytes) noexcept;
}
