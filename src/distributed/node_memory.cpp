// SPDX-License-Identifier: Apache-2.0
#include "distributed/node_memory.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace ito::dist::detail {
namespace {

// After the region's bytes: where the ranks of a node prove they share it
// (words 0 and 1; doorbells after doorbells_at).
constexpr std::size_t check_bytes = node_page_bytes;
constexpr std::size_t page_bytes = 4096;

std::size_t file_bytes(std::size_t bytes) {
  return readers_offset(bytes) + readers_words_for(bytes / page_bytes) * sizeof(std::uint64_t);
}

[[noreturn]] void stop(const char* what, int err) {
  std::fprintf(stderr, "ito: dsm: %s: %s\n", what, std::strerror(err));
  std::exit(2);
}

int own_memory(std::size_t bytes) {
  const int fd = memfd_create("ito-dsm", MFD_CLOEXEC);
  if (fd < 0) stop("cannot create the region's memory (memfd_create)", errno);
  if (ftruncate(fd, static_cast<off_t>(file_bytes(bytes))) != 0)
    stop("cannot size the region (ftruncate; try a smaller ITO_DSM_SIZE)", errno);
  return fd;
}

// What a node's first rank tells the others: where its memory is, and what
// they must find in it.
struct first_rank_card {
  std::int64_t pid;
  std::int64_t fd;
  std::uint64_t token;
};

std::uint64_t random_token() {
  std::uint64_t t = 0;
  if (getrandom(&t, sizeof t, 0) != sizeof t)
    t = static_cast<std::uint64_t>(std::time(nullptr)) * 0x9e3779b97f4a7c15u ^
        static_cast<std::uint64_t>(getpid());
  return t | 1;  // never the zero of fresh memory
}

std::uint64_t* map_check_page(int fd, std::size_t bytes) {
  void* p = mmap(nullptr, check_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                 static_cast<off_t>(node_page_offset(bytes)));
  return p == MAP_FAILED ? nullptr : static_cast<std::uint64_t*>(p);
}

// A rank other than the first: its memfd, opened through /proc (the same
// file, not a copy), if the token is there; it then counts itself in. -1
// otherwise (another pid namespace names another process, or none).
int open_first_ranks(const first_rank_card& card, std::size_t bytes) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%lld/fd/%lld", static_cast<long long>(card.pid),
                static_cast<long long>(card.fd));
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat s {};
  std::uint64_t* check = nullptr;
  if (fstat(fd, &s) == 0 && static_cast<std::size_t>(s.st_size) == file_bytes(bytes))
    check = map_check_page(fd, bytes);
  const bool ours = check && __atomic_load_n(&check[0], __ATOMIC_ACQUIRE) == card.token;
  if (ours) __atomic_fetch_add(&check[1], 1, __ATOMIC_SEQ_CST);
  if (check) munmap(check, check_bytes);
  if (ours) return fd;
  close(fd);
  return -1;
}

// The ranks MPI puts on this rank's host (cut in pairs, for `pair`) try to
// share their first rank's memory. Returns this rank's memfd and sets `first`
// to the world rank of its node's first rank: the host's first if all its
// ranks now share it, else this rank (a host that fails is one node per rank).
int share_within_host(std::size_t bytes, int world_rank, node_shape shape, int& first) {
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &host);
  int me = 0, ranks = 1;
  MPI_Comm_rank(host, &me);
  if (shape == node_shape::pair) {
    MPI_Comm pair;
    MPI_Comm_split(host, me / 2, me, &pair);
    MPI_Comm_free(&host);
    host = pair;
    MPI_Comm_rank(host, &me);
  }
  MPI_Comm_size(host, &ranks);
  first = world_rank;
  if (ranks == 1) {
    MPI_Comm_free(&host);
    return own_memory(bytes);
  }
  first_rank_card card{};
  int fd = -1;
  std::uint64_t* check = nullptr;
  if (me == 0) {
    fd = own_memory(bytes);
    check = map_check_page(fd, bytes);
    if (!check) stop("cannot map the region's memory", errno);
    card = {getpid(), fd, random_token()};
    __atomic_store_n(&check[0], card.token, __ATOMIC_RELEASE);
  }
  MPI_Bcast(&card, sizeof card, MPI_BYTE, 0, host);
  if (me != 0) fd = open_first_ranks(card, bytes);
  int opened = fd >= 0, all_opened = 0;
  MPI_Allreduce(&opened, &all_opened, 1, MPI_INT, MPI_LAND, host);
  int verdict = all_opened;
  if (me == 0) {
    // Every other rank's increment is visible here: the memory is one.
    verdict = all_opened && __atomic_load_n(&check[1], __ATOMIC_ACQUIRE) ==
                                static_cast<std::uint64_t>(ranks - 1);
    munmap(check, check_bytes);
  }
  MPI_Bcast(&verdict, 1, MPI_INT, 0, host);
  if (!verdict) {
    if (me != 0) {
      if (fd >= 0) close(fd);
      fd = own_memory(bytes);
    } else {
      char name[MPI_MAX_PROCESSOR_NAME] = {};
      int length = 0;
      MPI_Get_processor_name(name, &length);
      std::fprintf(stderr,
                   "ito: dist: the %d ranks MPI places on host %s cannot map one copy of memory "
                   "(another pid namespace, or /proc/<pid>/fd not readable): one node per rank\n",
                   ranks, name);
    }
  }
  if (verdict) MPI_Bcast(&first, 1, MPI_INT, 0, host);  // ranks are ordered by world rank
  MPI_Comm_free(&host);
  return fd;
}

}  // namespace

std::size_t readers_offset(std::size_t bytes) noexcept {
  return node_page_offset(bytes) + check_bytes;
}

node_files open_node_memory(std::size_t bytes, node_shape shape, node_info& node) {
  int world_rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int first = world_rank;  // a node is named by its first rank
  const int fd = shape == node_shape::rank ? own_memory(bytes)
                                           : share_within_host(bytes, world_rank, shape, first);
  std::vector<int> firsts(static_cast<std::size_t>(size));
  MPI_Allgather(&first, 1, MPI_INT, firsts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int> distinct = firsts;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  auto node_named = [&](int first_rank) {
    return static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), first_rank) -
                            distinct.begin());
  };
  node.nodes = static_cast<int>(distinct.size());
  node.node = node_named(first);
  node.ranks_in_node = static_cast<int>(std::count(firsts.begin(), firsts.end(), first));
  node.first_in_node = first == world_rank;
  node.node_of_rank.resize(firsts.size());
  for (std::size_t r = 0; r < firsts.size(); ++r) node.node_of_rank[r] = node_named(firsts[r]);
  // A node of several ranks among several nodes: pages homed elsewhere are
  // copied into memory of this rank's own.
  const bool own_copies = node.nodes > 1 && node.ranks_in_node > 1;
  return {fd, own_copies ? own_memory(bytes) : fd};
}

}  // namespace ito::dist::detail
