// SPDX-License-Identifier: Apache-2.0
// Receiving a point-to-point message of unknown length on ito's own
// communicators (the distributed scheduler's wire, remote frees), without
// blocking: probe, size the buffer, receive.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace ito::dist::detail {

// The next message with `tag` on comm, if one has arrived: received whole
// into `into` (resized to its count of `type`), its sender in `from`.
// False, and nothing changed, when none has arrived.
template <class T>
bool receive_if_arrived(MPI_Comm comm, int tag, MPI_Datatype type, std::vector<T>& into, int& from) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, &status);
  if (!flag) return false;
  int count = 0;
  MPI_Get_count(&status, type, &count);
  into.resize(static_cast<std::size_t>(count));
  MPI_Recv(into.data(), count, type, status.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE);
  from = status.MPI_SOURCE;
  return true;
}

}  // namespace ito::dist::detail
