// SPDX-License-Identifier: Apache-2.0
// Nodes: ranks that map one copy of memory. MPI groups the ranks of a host
// (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED); that they can share memory is
// then tried, not assumed: the node's first rank creates the region's memfd,
// the others open it through /proc/<pid>/fd and each increments a counter in
// it that the first rank must see. Ranks in other pid namespaces, or whose
// open or store fails, are nodes of their own (one line says so).
//
// The DSM runs in one of three shapes: every rank of the job in one node
// (the region is one shared mapping: plain loads and stores, fences are
// memory fences), one node per rank (every page through the protocol of
// dsm/dsm.hpp), or several nodes of which some hold several ranks: a page homed
// on a rank of this rank's node is read and written in the node's memory
// with plain loads and stores, one homed on another node through the
// protocol, into a copy of this rank's own (dsm/dsm.hpp, "node homes").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ito::dist::detail {

// ITO_DIST_NODE: what a node is.
enum class node_shape {
  host,  // the ranks of a host that can map one copy of memory
  rank,  // every rank alone
  pair,  // a host's ranks in nodes of two (the protocol between nodes of
         // several ranks, tested on one machine)
};

struct node_info {
  int node = 0;           // this rank's node, 0 .. nodes - 1
  int nodes = 1;
  int ranks_in_node = 1;  // ranks of this node
  bool first_in_node = true;  // created the node's memory (and initialised it)
  std::vector<int> node_of_rank;  // every rank's node
};

// The memory of a node: the region's pages (`bytes`), a page where its ranks
// prove they share it (its first line) and keep their doorbells (the rest:
// doorbells.hpp), then the readers masks of the pages (a word each,
// readers_words_for(pages) of them): a home's readers are read by every rank
// of its node.
inline constexpr std::size_t node_page_bytes = 4096;
inline std::size_t readers_words_for(std::size_t pages) noexcept {  // whole pages of words
  constexpr std::size_t words_per_page = node_page_bytes / sizeof(std::uint64_t);
  return (pages + words_per_page - 1) / words_per_page * words_per_page;
}
// bytes rounded up to whole pages.
inline std::size_t page_rounded(std::size_t bytes) noexcept {
  return (bytes + node_page_bytes - 1) & ~(node_page_bytes - 1);
}
inline constexpr std::size_t doorbells_at = 64;  // within the node's page
inline std::size_t node_page_offset(std::size_t bytes) noexcept { return bytes; }
std::size_t readers_offset(std::size_t bytes) noexcept;

// The files a rank maps: its node's memory and its own (the same file
// unless its node is one of several and holds several ranks: then pages
// homed on other nodes are copied into its own).
struct node_files {
  int node_fd = -1;
  int own_fd = -1;
};

// Collective. Exits with an `ito: dsm:` message when no memory can be had.
node_files open_node_memory(std::size_t bytes, node_shape shape, node_info& node);

}  // namespace ito::dist::detail
