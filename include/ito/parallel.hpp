// SPDX-License-Identifier: Apache-2.0
// parallel_invoke: fork-join without a ULT per branch. Each branch but the
// first is queued on the calling worker's branch deque as a small record on
// the caller's stack; the first runs at once; then the others are taken back
// and run as plain calls, unless someone else took one first (a thief, or
// the worker's own scheduler while the caller was away): only such a branch
// becomes a ULT, and only then does the caller wait.
// (Lazy task creation: Mohr, Kranz, Halstead 1990; the work-first principle.)
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ito/detail/parallel_branch.hpp"

namespace ito {

// Runs every callable (each called with no arguments, by reference: nothing
// is copied), possibly in parallel, and returns when all have returned. Must
// be called from a ULT (else usage_error(EPERM)).
//
// A branch runs either as a plain call on the caller's stack, as the calling
// ULT, or, when another worker steals it first, as a ULT of its own there:
// code in a branch must not depend on which (its ULT id, ULT-local values, a
// mutex the caller holds), nor wait for another branch of the same call (on
// one worker they run one after another: the first, then the last, and so
// back to the second).
// All branches run even when one throws; then the exception of the first
// (in argument order) that threw is rethrown and the others are dropped.
// ito::exit() in a branch ends the calling ULT once every branch is done.
// In the distributed mode branches run in the calling process only; work
// for other processes is create_thread's (their thieves take ULTs).
template <class F0, class... F>
void parallel_invoke(F0&& first, F&&... rest) {
  static_assert(sizeof...(F) >= 1, "parallel_invoke needs at least two callables");
  std::tuple<detail::branch_of<std::remove_reference_t<F>>...> queued{rest...};
  std::apply([](auto&... b) { (detail::push_branch(&b), ...); }, queued);
  void* first_error = nullptr;
  detail::run_branch(first, &first_error);
  detail::join_branches(queued, std::index_sequence_for<F...>{});
  std::apply(
      [&](auto&... b) {
        if ((first_error || ... || b.error)) [[unlikely]] {
          void* errors[] = {first_error, b.error...};
          detail::rethrow_first(errors, sizeof...(F) + 1);
        }
      },
      queued);
}

}  // namespace ito
