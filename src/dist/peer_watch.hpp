// SPDX-License-Identifier: Apache-2.0
// Names a rank that dies. MPI launchers end the whole job when one process
// dies, but name it by process id (MPICH: "BAD TERMINATION ... PID 22602");
// a thread per rank watches the other ranks on its host (a pidfd each, no
// polling: the thread sleeps in poll()) and, when one ends while the runtime
// is still up, says which rank it was and aborts the job itself, so that it
// also ends under a launcher that would not.
#pragma once

namespace ito::dist::detail {

// Collective (every rank, after MPI is up).
void start_peer_watch(int rank, int size);
// Before the runtime's last barrier: from then on ranks may end normally.
void stop_peer_watch() noexcept;

}  // namespace ito::dist::detail
