// SPDX-License-Identifier: Apache-2.0
// Names a rank that dies. MPI launchers end the whole job when one process
// dies, but name it by process id (MPICH: "BAD TERMINATION ... PID 22602"),
// and a survivor's MPI call to the dead rank may kill it first, with no word.
// A thread per rank watches the other ranks and, when one is gone while the
// runtime is still up, says which rank it was and aborts the job itself, so
// that it also ends under a launcher that would not:
// - ranks on its own host through a pidfd each (no polling: the thread sleeps
//   in poll() until one ends);
// - ranks it cannot see that way (another host, another pid namespace)
//   through heartbeats: a message every ITO_DIST_HEARTBEAT_MS (default 1000;
//   0: none), on a communicator whose errors return to the watch instead of
//   ending the process; a rank not heard from for 10 intervals (at least 3 s)
//   is named as gone (crashed, killed, hung or cut off).
// The distributed scheduler's and the progress thread's communicators get an
// error handler that says, before the job ends, that an MPI call failed and
// what MPI said (usually the peer).
#pragma once

#include <mpi.h>

#include "common/settings.hpp"

namespace ito::dist::detail {

struct peer_watch_options {
  long heartbeat_ms = config::declared(config::setting_id::dist_heartbeat_ms).fallback;  // 0: none
  bool heartbeat_everyone = false;  // ITO_DIST_WATCH=heartbeat: no pidfds (tests the other-host path)
};
// From ITO_DIST_HEARTBEAT_MS and ITO_DIST_WATCH; config_error (from the
// environment) for a bad value.
peer_watch_options resolve_peer_watch_options();

// Collective (every rank, after MPI is up).
void start_peer_watch(int rank, int size, const peer_watch_options& options);
// Collective, before the runtime's last barrier: returns once every rank has
// arrived (the watch still beating meanwhile); from then on ranks may end
// normally.
void stop_peer_watch() noexcept;
// Makes an MPI failure on comm say so on stderr before the job ends.
void name_mpi_failures(MPI_Comm comm);

}  // namespace ito::dist::detail
