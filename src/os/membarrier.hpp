// SPDX-License-Identifier: Apache-2.0
// An asymmetric fence: a cheap side that is only a compiler barrier, and a
// heavy side (Linux membarrier, private expedited) after which every running
// thread of this process has passed a full memory barrier. A work-stealing
// deque uses it to drop the store-load fence from its owner's pop, the
// common path, and charge a steal (the rare one) with a system call instead.
#pragma once

namespace ito::os {

// Registers the process for private expedited membarrier, once; false where
// the kernel (or a seccomp filter, or valgrind) refuses: callers then keep
// full fences on both sides.
bool asymmetric_fence_ready() noexcept;

// The heavy side; only after asymmetric_fence_ready() returned true.
void heavy_fence() noexcept;

}  // namespace ito::os
