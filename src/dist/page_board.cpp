// SPDX-License-Identifier: Apache-2.0
#include "dist/page_board.hpp"

#include <cstdio>
#include <cstdlib>

namespace ito::dist::detail {
namespace {

std::size_t leaf_words(std::size_t pages) noexcept { return (pages + 63) / 64; }
std::size_t summary_words(std::size_t pages) noexcept { return (leaf_words(pages) + 63) / 64; }

[[noreturn]] void mpi_failed() {
  std::fprintf(stderr, "ito: dsm: sending write notices failed\n");
  std::abort();
}

}  // namespace

std::size_t page_board::words_for(std::size_t pages) noexcept {
  return leaf_words(pages) + summary_words(pages);
}

page_board::page_board(std::uint64_t* base, std::size_t first, std::size_t pages) noexcept
    : leaves_(base + first),
      summary_(base + first + leaf_words(pages)),
      leaf_at_(first),
      summary_at_(first + leaf_words(pages)),
      summary_words_(summary_words(pages)) {}

void page_board::mark_here(std::size_t page) noexcept {
  __atomic_fetch_or(&leaves_[page / 64], std::uint64_t{1} << (page % 64), __ATOMIC_ACQ_REL);
  __atomic_fetch_or(&summary_[page / (64 * 64)], std::uint64_t{1} << (page / 64 % 64),
                    __ATOMIC_ACQ_REL);
}

void board_posts::post(int rank, const page_board& board, std::size_t page) {
  marks_.push_back({rank, board.leaf_word(page), board.summary_word(page),
                    std::uint64_t{1} << (page % 64), std::uint64_t{1} << (page / 64 % 64)});
}

void board_posts::send_round(MPI_Win window, bool summaries) {
  bits_.resize(marks_.size());  // MPI reads the origin buffers until the flush
  std::size_t k = 0, used = 0;
  while (k < marks_.size()) {
    const mark& m = marks_[k];
    const std::size_t word = summaries ? m.summary_word : m.leaf_word;
    std::uint64_t& bits = bits_[used++];
    bits = 0;
    for (; k < marks_.size() && marks_[k].rank == m.rank &&
           (summaries ? marks_[k].summary_word : marks_[k].leaf_word) == word;
         ++k)
      bits |= summaries ? marks_[k].summary_bit : marks_[k].leaf_bit;
    if (MPI_Accumulate(&bits, 1, MPI_UINT64_T, m.rank, static_cast<MPI_Aint>(word), 1,
                       MPI_UINT64_T, MPI_BOR, window) != MPI_SUCCESS)
      mpi_failed();
  }
  if (MPI_Win_flush_all(window) != MPI_SUCCESS) mpi_failed();
}

std::size_t board_posts::send(MPI_Win window) {
  if (marks_.empty()) return 0;
  send_round(window, false);
  send_round(window, true);
  const std::size_t n = marks_.size();
  marks_.clear();
  return n;
}

}  // namespace ito::dist::detail
