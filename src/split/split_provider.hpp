// SPDX-License-Identifier: Apache-2.0
// The lazy and fair_use policies as the runtime's stack provider
// (stack/provider.hpp): the only way the scheduler reaches split stacks.
#pragma once

#include <cstddef>
#include <cstdio>

#include "split/segment_pool.hpp"
#include "split/split_stack.hpp"
#include "stack/provider.hpp"

namespace ito::sched::split {

// The lazy and fair_use policies behind the stack-provider interface.
class split_provider final : public stack::stack_provider {
 public:
  explicit split_provider(const options& o);
  ~split_provider() override;
  void attach(worker* w) override;
  ult* allocate(worker* w, std::size_t frame_bytes, void** frame) override;
  void finish(ult* self) noexcept override;
  bool exited_into_parent(worker* w, ult* self, ult* parent) noexcept override;
  void exited(worker* w, ult* self) noexcept override;
  void release(worker* w, ult* u) noexcept override;
  void parking(worker* w) noexcept override;
  void drain(worker* w) noexcept override;
  void print_stats(const runtime_state& rt, std::FILE* out) const override;

  const bool fair_use;
  stack::segment_pool segments;  // blocks, fair_use's pool of regions
};

inline split_provider& provider(worker* w) noexcept {
  return *static_cast<split_provider*>(w->stack_provider);
}
// The running runtime's split provider (tests, benchmarks); it must have one.
inline split_provider& provider(runtime_state* rt) noexcept {
  return *static_cast<split_provider*>(rt->stack_provider.get());
}

}  // namespace ito::sched::split
