// SPDX-License-Identifier: Apache-2.0
// Twin frames (src/distributed/dsm/twin_frames.hpp), without MPI: a page
// keeps its frame until given back, a frame given back goes to the next page
// that needs one with its memory (and contents) kept while within the bound,
// and a give-back that would exceed it drops the memory of every frame it frees.
#include "distributed/dsm/twin_frames.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

namespace {

using ito::dist::detail::twin_frames;
constexpr std::size_t frame = 4096;

void give_back_all(twin_frames& t, const std::vector<std::size_t>& pages) {
  t.give_back(pages.data(), pages.size(), [](std::size_t) { return true; });
}

TEST(TwinFrames, APageKeepsOneFrameAndPagesGetDistinctOnes) {
  twin_frames t(1024, 16);
  std::set<char*> seen;
  for (std::size_t page = 0; page < 1024; page += 7) {
    char* f = t.take(page);
    EXPECT_EQ(t.take(page), f) << "page " << page << " took a second frame";
    EXPECT_EQ(t.of(page), f);
    EXPECT_TRUE(seen.insert(f).second) << "two pages share a frame";
    std::memset(f, static_cast<int>(page), frame);  // the whole frame is usable
  }
  EXPECT_EQ(t.of(1), nullptr) << "a page that took none has a twin";
}

TEST(TwinFrames, AFrameGivenBackGoesToTheNextPageWithItsMemory) {
  twin_frames t(64, 16);
  char* f = t.take(3);
  std::memset(f, 0x5a, frame);
  give_back_all(t, {3});
  EXPECT_EQ(t.kept(), 1u);
  EXPECT_EQ(t.of(3), nullptr) << "a page kept its twin after giving it back";
  char* g = t.take(40);
  EXPECT_EQ(g, f) << "a new page did not reuse the kept frame";
  EXPECT_EQ(static_cast<unsigned char>(g[100]), 0x5a) << "the kept frame lost its memory";
  EXPECT_EQ(t.kept(), 0u);
}

TEST(TwinFrames, OnlyReleasedPagesGiveTheirFramesBack) {
  twin_frames t(64, 16);
  char* hot = t.take(1);
  (void)t.take(2);
  const std::size_t list[] = {1, 2};
  t.give_back(list, 2, [](std::size_t page) { return page == 2; });
  EXPECT_EQ(t.of(1), hot) << "a page that stays (hot, pinned) lost its twin";
  EXPECT_EQ(t.of(2), nullptr);
  EXPECT_EQ(t.kept(), 1u);
}

TEST(TwinFrames, AGiveBackBeyondTheBoundDropsTheMemoryOfAllItFrees) {
  constexpr std::size_t bound = 8;
  twin_frames t(256, bound);
  std::vector<std::size_t> few{0, 1, 2};
  for (std::size_t page : few) std::memset(t.take(page), 1, frame);
  give_back_all(t, few);
  ASSERT_EQ(t.kept(), few.size());
  std::vector<std::size_t> many;
  for (std::size_t page = 100; page < 100 + 2 * bound; ++page) many.push_back(page);
  std::vector<char*> frames;
  for (std::size_t page : many) {
    frames.push_back(t.take(page));
    std::memset(frames.back(), 7, frame);
  }
  EXPECT_EQ(t.kept(), 0u) << "the kept frames were not taken first";
  give_back_all(t, many);
  EXPECT_EQ(t.kept(), 0u) << "a give-back beyond the bound kept memory";
  for (char* f : frames) EXPECT_EQ(f[0], 0) << "a frame given back beyond the bound kept its bytes";
  // Its frames are reused, not leaked: as many pages again take no new ones.
  std::set<char*> again;
  for (std::size_t page : many) again.insert(t.take(page + 50));
  EXPECT_EQ(again, std::set<char*>(frames.begin(), frames.end()));
}

}  // namespace
