// SPDX-License-Identifier: Apache-2.0
// The distributed API without a distributed runtime: clear errors, no MPI
// started. (A plain test program: no mpiexec.)
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "ito/dist.h"
#include "ito/dist.hpp"
#include "ito/error.hpp"
#include "ito/options.hpp"

namespace {

TEST(dist_misuse, queries_without_a_runtime_are_eperm_and_say_what_to_do) {
  try {
    (void)ito::dist::rank();
    FAIL() << "rank() without a runtime did not throw";
  } catch (const ito::usage_error& e) {
    EXPECT_EQ(e.code(), EPERM);
    EXPECT_NE(std::strstr(e.what(), "ito::dist::runtime"), nullptr) << e.what();
  }
  EXPECT_THROW(ito::dist::barrier(), ito::usage_error);
  EXPECT_THROW((void)ito::dist::region(), ito::usage_error);
  int rank = 0;
  EXPECT_EQ(ito_dist_rank(&rank), EPERM);
  EXPECT_EQ(ito_dist_barrier(), EPERM);
  EXPECT_EQ(ito_dist_finalize(), EPERM);
}

TEST(dist_misuse, a_region_size_out_of_range_is_refused_before_mpi_starts) {
  ito::dist::options o;
  o.region_bytes = 4096;
  try {
    ito::dist::runtime r(nullptr, nullptr, o);
    FAIL() << "a 4 KiB region was accepted";
  } catch (const ito::config_error& e) {
    EXPECT_FALSE(e.from_environment());
    EXPECT_NE(std::strstr(e.what(), "region_bytes=4096 is invalid: expected a size in [64M, 16T]"),
              nullptr)
        << e.what();
  }
  EXPECT_EQ(ito_dist_init(nullptr, nullptr, 4096), EINVAL);
}

}  // namespace
