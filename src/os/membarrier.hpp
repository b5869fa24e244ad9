// SPDX-License-Identifier: Apache-2.0
// An asymmetric fence: a cheap side that is only a compiler barrier, and a
// heavy side (Linux membarrier, private expedited) after which every running
// thread of this process has passed a full memory barrier. A work-stealing
// deque uses it to drop the store-load fence from its owner's pop, the
// common path, and charge a steal (the rare one) with a system call instead.
#pragma once

namespace ito::os {

// Whether the heavy side may be used: the process must be registered with
// the kernel first, once. With one thread that costs ~2 µs; with several the
// kernel waits for an RCU grace period (~10 ms here), so unless
// `whatever_it_costs`, a process that has other threads and is not
// registered yet is not registered now (false). False too where the kernel
// (or a seccomp filter, or valgrind) refuses: callers keep full fences then.
bool asymmetric_fence_ready(bool whatever_it_costs = false) noexcept;

// The heavy side; only after asymmetric_fence_ready() returned true.
void heavy_fence() noexcept;

}  // namespace ito::os
