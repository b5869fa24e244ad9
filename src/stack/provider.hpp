// SPDX-License-Identifier: Apache-2.0
// The stack-provider interface: where a ULT's stack comes from when it is not
// the fixed policy's. One provider is chosen per runtime at start
// (make_stack_provider); the fixed policy has none, so the scheduler's fast
// paths test one null pointer (worker::stack_provider) or one byte
// (ult::stack_from == stack_origin::provided) where they always tested a flag,
// and call through this interface only for the other policies.
//
// Contract (docs/ARCHITECTURE.md, "The provider interface"):
//   attach    at runtime start, on the starting thread, once per worker before
//             any worker runs: set up w->stack_state.
//   allocate  sched::allocate, on the spawning context's stack (a ULT, or the
//             scheduler stack for a flow node): a descriptor (renewed with
//             sched::renew, registered with sched::registry_add), its frame
//             (*frame, frame_bytes, 16-aligned) and a stack. It leaves
//             stack_from == provided, the top the child starts at in u->sp,
//             and in the word at that top the split-stack limit the child
//             starts with (null without split stacks). May throw bad_alloc;
//             must not block.
//   finish    on the ULT's own stack once its body (and key destructors)
//             returned, before it leaves it. Must not block.
//   exited_into_parent
//             in finish, on the ended ULT's own stack, when the context resumed
//             next is its parent, which has not run since the fork and which
//             nobody else can resume or know the ULT from (a quick resume): do
//             exited's work now, changing only the parent's saved context and
//             the provider's own state, and return true (the exit hook is then
//             skipped); false: exited runs in the hook as usual. Must not block.
//   exited    in the exit hook, on the next context's stack, once nobody runs
//             on the ended ULT's stack and before its end is published (a
//             joiner may recycle the descriptor right after). The stack may be
//             reused from here on; the descriptor may not. Must not block.
//   release   after join or detach (sched::release, any stack; w is null on a
//             thread that is not a worker): the descriptor is dead after it.
//   parking   a worker is about to park (on its scheduler stack, between
//             ULTs): give what it keeps for its own ULTs alone, and others
//             could use, to the runtime's shared pools. Must not block long.
//   drain     at runtime stop, on the stopping thread, after every worker
//             stopped: free w's cached state.
//   print_stats  ITO_STATS=1, at stop.
// The provider's object lives as long as the runtime and is destroyed after
// every worker was drained.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>

#include "ito/options.hpp"

namespace ito::sched {
struct ult;
struct worker;
struct runtime_state;
}  // namespace ito::sched

namespace ito::stack {

class stack_provider {
 public:
  virtual ~stack_provider() = default;
  virtual void attach(sched::worker* w) = 0;
  virtual sched::ult* allocate(sched::worker* w, std::size_t frame_bytes, void** frame) = 0;
  virtual void finish(sched::ult* self) noexcept = 0;
  virtual bool exited_into_parent(sched::worker* w, sched::ult* self,
                                  sched::ult* parent) noexcept = 0;
  virtual void exited(sched::worker* w, sched::ult* self) noexcept = 0;
  virtual void release(sched::worker* w, sched::ult* u) noexcept = 0;
  virtual void parking(sched::worker* w) noexcept = 0;
  virtual void drain(sched::worker* w) noexcept = 0;
  virtual void print_stats(const sched::runtime_state& rt, std::FILE* out) const = 0;
};

// The provider for o.stacks, or null for the fixed policy (the scheduler's
// own inlined path). The one place that names every provider.
std::unique_ptr<stack_provider> make_stack_provider(const options& o);

}  // namespace ito::stack
