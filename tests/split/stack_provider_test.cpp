// SPDX-License-Identifier: Apache-2.0
// The stack-provider interface: the fixed policy has no provider (the
// scheduler's inlined path), lazy and fair_use one per runtime, shared by
// every worker, each worker with its own state, and their ULTs marked as the
// provider's with their split-stack record next to the descriptor.
#include <gtest/gtest.h>

#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "sched/scheduler.hpp"
#include "split_support.hpp"
#include "split/split_provider.hpp"

namespace {

using ito::stack_policy;
using split_test::policy;

TEST(stack_provider, the_fixed_policy_has_none) {
  EXPECT_EQ(ito::stack::make_stack_provider(policy(stack_policy::fixed, 1)), nullptr);
  ito::runtime rt(policy(stack_policy::fixed, 2));
  auto* state = ito::sched::g_runtime.load();
  EXPECT_EQ(state->stack_provider, nullptr);
  for (auto& w : state->workers) {
    EXPECT_EQ(w->stack_provider, nullptr);
    EXPECT_EQ(w->stack_state, nullptr);
  }
  bool from_pool = ito::join(ito::create_thread(ito::own_ult, [] {
    return ito::sched::current_ult()->stack_from == ito::sched::stack_origin::pool;
  }));
  EXPECT_TRUE(from_pool);
}

class stack_provider_split : public ::testing::TestWithParam<stack_policy> {};

TEST_P(stack_provider_split, one_per_runtime_with_state_per_worker) {
  ito::runtime rt(policy(GetParam(), 3));
  auto* state = ito::sched::g_runtime.load();
  ASSERT_NE(state->stack_provider, nullptr);
  auto& provider = ito::sched::split::provider(state);
  EXPECT_EQ(provider.fair_use, GetParam() == stack_policy::fair_use);
  for (auto& w : state->workers) {
    EXPECT_EQ(w->stack_provider, state->stack_provider.get());
    ASSERT_NE(w->stack_state, nullptr);
    for (auto& other : state->workers)
      if (other != w) {
        EXPECT_NE(other->stack_state, w->stack_state);
      }
  }
}

TEST_P(stack_provider_split, its_ults_run_on_its_segments) {
  ito::runtime rt(policy(GetParam(), 1));
  bool ok = ito::join(ito::create_thread(ito::own_ult, [] {
    ito::sched::ult* self = ito::sched::current_ult();
    if (!self->from_provider()) return false;
    ito::sched::split::split_ult* record = ito::sched::split::ext(self);
    // It runs between its segment's block and its limit word.
    char* here = static_cast<char*>(__builtin_frame_address(0));
    return record->cur_block != nullptr && here > split_test::limit_word() &&
           here < record->cur_block->end();
  }));
  EXPECT_TRUE(ok);
}

INSTANTIATE_TEST_SUITE_P(policies, stack_provider_split,
                         ::testing::Values(stack_policy::lazy, stack_policy::fair_use),
                         [](const auto& info) {
                           return std::string(info.param == stack_policy::lazy ? "lazy"
                                                                                : "fair_use");
                         });

}  // namespace
