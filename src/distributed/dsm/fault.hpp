// SPDX-License-Identifier: Apache-2.0
// The fault path: SIGSEGV in the view, the page brought in (fetch.hpp) or
// made writable, with a twin away from its home (diffs.hpp).
#pragma once

#include <signal.h>

#include <cstddef>

#include "distributed/dsm/dsm_bookkeeping.hpp"

namespace ito::dist::detail {

// A fault on `page` (write: a store), with d.lock held; also a pin's way to
// hold its pages.
void serve_fault(dsm& d, std::size_t page, bool write);
// The SIGSEGV handler start_dsm installs (it chains to the previous one for
// addresses outside the DSM).
void on_fault(int sig, siginfo_t* info, void* context);

}  // namespace ito::dist::detail
