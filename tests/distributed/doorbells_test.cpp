// SPDX-License-Identifier: Apache-2.0
// Doorbells (doorbells.hpp): a rank wakes a node mate's progress thread
// through a word in the node's memory. Tested without MPI: the board over a
// shared page, a sleeper in another process, and which bells a rank finds
// in its node's memory file.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>

#include "distributed/doorbells.hpp"
#include "distributed/node_memory.hpp"

namespace {

using ito::dist::detail::doorbell_board;
using ito::dist::detail::node_page_bytes;
using clock_type = std::chrono::steady_clock;

constexpr std::int64_t long_ns = 30'000'000'000;  // far longer than any wake-up

void* shared_page() {
  void* p = mmap(nullptr, node_page_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  return p;
}

TEST(doorbells, every_slot_has_a_line_of_its_own_in_the_page_and_many_ranks_wrap) {
  void* page = shared_page();
  const doorbell_board board(page);
  const auto* base = static_cast<const char*>(page);
  ASSERT_GE(doorbell_board::slots(), 32u);
  for (std::size_t i = 0; i < doorbell_board::slots(); ++i) {
    const auto* bell = reinterpret_cast<const char*>(board.slot(static_cast<int>(i)));
    EXPECT_GE(bell, base + ito::dist::detail::doorbells_at);  // the proof words stay apart
    EXPECT_LE(bell + doorbell_board::line, base + node_page_bytes);
    if (i) {
      EXPECT_EQ(bell - reinterpret_cast<const char*>(board.slot(static_cast<int>(i - 1))),
                static_cast<std::ptrdiff_t>(doorbell_board::line));
    }
  }
  EXPECT_EQ(board.slot(static_cast<int>(doorbell_board::slots()) + 3), board.slot(3));
  munmap(page, node_page_bytes);
}

TEST(doorbells, a_ring_before_the_wait_is_not_lost) {
  ito::os::futex_word bell{0};
  doorbell_board::ring(&bell);
  const auto t0 = clock_type::now();
  doorbell_board::wait(&bell, long_ns);
  EXPECT_LT(clock_type::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(bell.load(), 0u) << "the wait takes the ring";
}

TEST(doorbells, an_unrung_wait_ends_at_its_timeout) {
  ito::os::futex_word bell{0};
  const auto t0 = clock_type::now();
  doorbell_board::wait(&bell, 20'000'000);
  EXPECT_GE(clock_type::now() - t0, std::chrono::milliseconds(19));
}

// The point of it: a process sleeping on its bell wakes when another process
// rings it, long before its timeout.
TEST(doorbells, a_ring_wakes_a_sleeper_in_another_process) {
  void* page = shared_page();
  const doorbell_board board(page);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto t0 = clock_type::now();
    doorbell_board::wait(board.slot(1), long_ns);
    _exit(clock_type::now() - t0 < std::chrono::seconds(20) ? 0 : 1);
  }
  usleep(100'000);  // most likely asleep by now; rung earlier, it returns at once
  doorbell_board::ring(board.slot(1));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the sleeper waited out its timeout";
  munmap(page, node_page_bytes);
}

// open_doorbells over a node's memory file: rank 1 of a job whose ranks 0, 1
// and 3 form node 0 and rank 2 node 1. Its own bell is slot 1 (its place in
// its node); ringing rank 3 sets slot 2; ringing rank 2 (another node) or
// itself sets nothing.
TEST(doorbells, a_rank_rings_its_node_mates_and_nobody_else) {
  using namespace ito::dist::detail;
  constexpr std::size_t region = 8 * 4096;
  const int fd = memfd_create("doorbells-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(region + node_page_bytes)), 0);
  node_info node;
  node.nodes = 2;
  node.ranks_in_node = 3;
  node.node_of_rank = {0, 0, 1, 0};
  open_doorbells(fd, region, node, /*rank=*/1);
  void* page = mmap(nullptr, node_page_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                    static_cast<off_t>(node_page_offset(region)));
  ASSERT_NE(page, MAP_FAILED);
  const doorbell_board board(page);
  auto rung = [&](int slot) { return board.slot(slot)->load() != 0; };

  ASSERT_NE(own_doorbell(), nullptr);
  ring_doorbell(3);
  EXPECT_TRUE(rung(2));
  ring_doorbell(2);
  ring_doorbell(1);
  ring_doorbell(-1);
  ring_doorbell(4);
  EXPECT_FALSE(rung(0));
  EXPECT_FALSE(rung(1));
  for (std::size_t i = 3; i < doorbell_board::slots(); ++i) EXPECT_FALSE(rung(static_cast<int>(i)));
  doorbell_board::ring(own_doorbell());  // its own bell is slot 1 of the node's page
  EXPECT_TRUE(rung(1));

  close_doorbells();
  EXPECT_EQ(own_doorbell(), nullptr);
  ring_doorbell(0);  // closed: nothing, and no crash
  EXPECT_FALSE(rung(0));
  munmap(page, node_page_bytes);
  close(fd);
}

TEST(doorbells, a_node_of_one_rank_has_none) {
  using namespace ito::dist::detail;
  node_info node;
  node.nodes = 2;
  node.ranks_in_node = 1;
  node.node_of_rank = {0, 1};
  open_doorbells(-1, 4096, node, 0);
  EXPECT_EQ(own_doorbell(), nullptr);
  ring_doorbell(1);  // a rank of another node: nothing to ring
}

}  // namespace
