// SPDX-License-Identifier: Apache-2.0
// Nodes: ranks that map one copy of memory. MPI groups the ranks of a host
// (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED); that they can share memory is
// then tried, not assumed: the node's first rank creates the region's memfd,
// the others open it through /proc/<pid>/fd and each increments a counter in
// it that the first rank must see. Ranks in other pid namespaces, or whose
// open or store fails, are nodes of their own (one line says so).
//
// The DSM today runs in one of two shapes: every rank of the job in one node
// (the region is one shared mapping: plain loads and stores, fences are
// memory fences) or one node per rank (every page through the protocol of
// dsm.hpp). A job whose nodes differ in size uses the second, saying so:
// the protocol between nodes of several ranks is not built yet.
#pragma once

#include <cstddef>

namespace ito::dist::detail {

struct node_info {
  int node = 0;           // this rank's node, 0 .. nodes - 1
  int nodes = 1;
  int ranks_in_node = 1;  // ranks of this node
  bool first_in_node = true;  // created the node's memory (and initialised it)
};

// Collective. Returns the memfd (`bytes` long) this rank maps as its region:
// its node's when the whole job is one node, else its own. `per_rank`: one
// node per rank without trying (ITO_DIST_NODE=rank). Exits with an `ito:
// dsm:` message when no memory can be had.
int open_node_memory(std::size_t bytes, bool per_rank, node_info& node);

}  // namespace ito::dist::detail
