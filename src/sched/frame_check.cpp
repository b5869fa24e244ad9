// SPDX-License-Identifier: Apache-2.0
// How large a new ULT's frame may be (overflow.hpp declares it). Apart from
// overflow.cpp because that file is built without -fsplit-stack in the split
// build (its handler runs on a sigaltstack): a direct call from allocate into
// non-split code sent every allocate of a split program through
// __morestack_non_split (~8 ns a spawn), though this is called once.
#include <cerrno>
#include <cstdint>
#include <string>

#include "ito/error.hpp"
#include "sched/overflow.hpp"
#include "sched/scheduler.hpp"

namespace ito::sched {

std::size_t max_frame_bytes(std::size_t stack_size) noexcept {
  // The descriptor sits 64-aligned below the stack's top word, the frame
  // 16-aligned below the descriptor: each alignment may cost its slack.
  constexpr std::size_t top = stack::stack_pool::max_colour + sizeof(std::uint64_t) + sizeof(ult) +
                              63 + 15 + min_run_room;
  return stack_size > top ? stack_size - top : 0;
}

void check_frame(worker* w, std::size_t frame_bytes) {
  const std::size_t stack_size = w->rt->stacks.stack_size();
  w->stacks.frame_limit = max_frame_bytes(stack_size);
  if (frame_bytes <= w->stacks.frame_limit) return;
  throw usage_error(E2BIG, "ito: a new ULT's frame (create_thread's callable and arguments, or "
                           "allocate's size) of " + std::to_string(frame_bytes) +
                               " bytes does not fit its " + std::to_string(stack_size) +
                               "-byte stack, which takes at most " +
                               std::to_string(w->stacks.frame_limit) +
                               " bytes; raise ITO_STACK_SIZE or options.stack_size, or pass "
                               "large objects by pointer");
}

}  // namespace ito::sched
