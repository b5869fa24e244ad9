// SPDX-License-Identifier: Apache-2.0
#include "distributed/mpi_session.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "distributed/dist_state.hpp"
#include "os/membarrier.hpp"

namespace ito::dist::detail {
namespace {

[[noreturn]] void stop(const char* why) {
  std::fprintf(stderr, "ito: dist: %s\n", why);
  std::exit(2);
}

}  // namespace

void start_mpi(int* argc, char*** argv, dist_state& st) {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (finalised) stop("MPI was finalised before ito::dist::runtime started");
  int provided = 0;
  if (initialised) {
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE)
      stop("the program initialised MPI below MPI_THREAD_MULTIPLE; ito's workers call MPI "
           "at once: use MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or let "
           "ito::dist::runtime initialise MPI");
  } else {
    // MPI starts threads of its own: the deques' asymmetric fence is cheap
    // to set up only before (os/membarrier.hpp).
    (void)os::asymmetric_fence_ready();
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      stop("MPI_Init_thread failed");
    st.owns_mpi = true;
    if (provided < MPI_THREAD_MULTIPLE)
      stop("this MPI does not provide MPI_THREAD_MULTIPLE, which ito's workers need");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &st.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &st.size);
}

void stop_mpi(dist_state& st) noexcept {
  if (st.owns_mpi) MPI_Finalize();
  st.owns_mpi = false;
}

}  // namespace ito::dist::detail
