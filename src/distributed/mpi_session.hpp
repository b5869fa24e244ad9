// SPDX-License-Identifier: Apache-2.0
// MPI for the distributed runtime: started with MPI_THREAD_MULTIPLE (workers
// of one rank call MPI at once) unless the program started it, in which case
// it must have asked for that level.
#pragma once

namespace ito::dist::detail {

struct dist_state;

// Fills st.rank, st.size, st.owns_mpi. Exits with an `ito: dist:` message
// when MPI cannot give what ito needs.
void start_mpi(int* argc, char*** argv, dist_state& st);
// Finalises MPI if start_mpi initialised it.
void stop_mpi(dist_state& st) noexcept;

}  // namespace ito::dist::detail
