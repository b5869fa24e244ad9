// SPDX-License-Identifier: Apache-2.0
// The rule by which the ranks of one host split its CPUs (host_cpus.hpp),
// in shapes this 2-core machine cannot launch; dist_test checks the launched
// ranks' parts at 2 and 4 ranks.
#include <gtest/gtest.h>

#include <vector>

#include "distributed/host_cpus.hpp"

namespace {

using ito::dist::detail::cpu_share;

// Every rank's part when `ranks` ranks share `cpus` CPUs (identical masks).
std::vector<unsigned> parts(unsigned cpus, unsigned ranks) {
  std::vector<unsigned> p;
  for (unsigned r = 0; r < ranks; ++r) p.push_back(cpu_share(cpus, ranks, r));
  return p;
}

TEST(host_cpus, ranks_sharing_a_mask_split_it_into_equal_parts) {
  EXPECT_EQ(parts(2, 2), (std::vector<unsigned>{1, 1}));
  EXPECT_EQ(parts(16, 4), (std::vector<unsigned>{4, 4, 4, 4}));
  EXPECT_EQ(parts(16, 1), (std::vector<unsigned>{16}));
}

TEST(host_cpus, the_first_ranks_take_the_cpus_that_do_not_divide) {
  EXPECT_EQ(parts(16, 3), (std::vector<unsigned>{6, 5, 5}));
  EXPECT_EQ(parts(7, 4), (std::vector<unsigned>{2, 2, 2, 1}));
}

TEST(host_cpus, every_rank_runs_a_worker_even_with_more_ranks_than_cpus) {
  EXPECT_EQ(parts(2, 4), (std::vector<unsigned>{1, 1, 1, 1}));
  EXPECT_EQ(cpu_share(0, 3, 0), 1u) << "no mask read";
  EXPECT_EQ(cpu_share(4, 0, 0), 1u);
}

// Ranks a launcher bound to CPUs of their own overlap nobody else: each keeps
// its mask.
TEST(host_cpus, a_rank_bound_to_its_own_cpus_keeps_them_all) {
  EXPECT_EQ(cpu_share(1, 1, 0), 1u);
  EXPECT_EQ(cpu_share(8, 1, 0), 8u);
}

}  // namespace
