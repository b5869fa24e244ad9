// SPDX-License-Identifier: Apache-2.0
// Blocks freed on a rank other than the one whose heap holds them: a ULT
// allocates, migrates (a thief took its continuation), and frees. The free
// goes back to the owner as a message, sent and handled on the progress
// thread; the sender releases its writes first (sd_fence), so the owner never
// hands out a block whose old bytes are still on their way to the home.
#pragma once

namespace ito::dist::detail {

// Collective, after MPI and the progress thread are up.
void start_remote_frees(int size);
// Any thread: p (a block of `owner`'s heap) goes back to it. usage_error
// when no progress thread runs (ITO_DIST_PROGRESS_US=0) to carry it.
void post_remote_free(int owner, void* p);
// Collective: returns once every free any rank posted has been handled by
// its owner. Before the progress thread stops.
void settle_remote_frees();
// After settle_remote_frees.
void stop_remote_frees() noexcept;

}  // namespace ito::dist::detail
