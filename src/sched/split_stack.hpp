// SPDX-License-Identifier: Apache-2.0
// The lazy and fair_use stack policies: ULTs on linked split-stack segments
// (gcc -fsplit-stack), children placed on their parent's unused segment tail,
// and the C side of ito's own __morestack (src/split/). docs/SPLIT_STACKS.md.
#pragma once

#include <cstddef>

#include "sched/ult.hpp"
#include "sched/worker.hpp"

namespace ito::sched {

// What __morestack (src/split/morestack_x86_64.S) keeps in its frame on the
// old stack: everything needed to go back when the new segment is left.
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

// A descriptor, a frame and a stack for a new ULT; the stack on the parent's
// tail when it fits. No lock or system call when the worker's caches serve.
ult* allocate(worker* w, std::size_t frame_bytes, void** frame);
// On the ULT's own stack, when its body has returned.
void on_finish(ult* self) noexcept;
// On the next context's stack, once nobody runs on the ended ULT's stack: its
// region is merged into its running owner, left to the owner, pooled or freed.
void on_exit(worker* w, ult* self) noexcept;
// Recycles the descriptor (after join or detach).
void release(worker* w, ult* u) noexcept;
// Frees what the worker caches (at runtime stop, after every ULT ended).
void drain(worker* w) noexcept;

}  // namespace split
}  // namespace ito::sched

// Called from the split-stack runtime's assembly (src/split/).
extern "C" {
void* ito_split_grow(ito::sched::split_frame* record, std::size_t frame_bytes, const char* args,
                     std::size_t arg_bytes, char* sp) noexcept;
void ito_split_shrink(ito::sched::split_frame* record, void* limit) noexcept;
void ito_split_unwind(ito::sched::split_frame* record, void* limit) noexcept;
void* ito_split_alloca(std::size_t bytes) noexcept;
}
