// SPDX-License-Identifier: Apache-2.0
// The end of a distributed run: rank 0's main function returns and says stop
// to every rank; then all wait for global quiescence (no live ULT and no
// message in flight on any rank) before their runtimes end.
#pragma once

namespace ito::dist::detail::quiescence {

// Registers the stop message's handler.
void start();
// Rank 0, once the main function returned: every rank's main ULT may stop.
void request_stop_all();
// From the main ULT of a rank other than 0: polls (and sleeps) until rank 0
// said stop.
void wait_for_stop();
// Collective, from the main ULT after stop: returns once no rank has a live
// ULT and every message any rank sent has been handled.
void quiesce();

}  // namespace ito::dist::detail::quiescence
