// SPDX-License-Identifier: Apache-2.0
// Address-space layout randomisation gives each rank its own code, data and
// library addresses; a thread that moves between ranks (ito's distributed
// scheduler) needs them equal. So a rank that starts randomised re-executes
// itself, once, with randomisation off (personality(ADDR_NO_RANDOMIZE)), as
// `setarch -R` would. Only before MPI starts: the launcher's connection is
// kept across exec (inherited descriptors and the environment).
#pragma once

namespace ito::dist::detail {

// Re-executes this process with ASLR off if it is on and this is not already
// the re-executed image; returns when no re-exec is needed or possible (then
// aslr_off() says so).
void reexec_without_aslr() noexcept;

// True when this process runs with ASLR off.
bool aslr_off() noexcept;

}  // namespace ito::dist::detail
