// SPDX-License-Identifier: Apache-2.0
// Twins of the pages a rank is writing, in frames that are reused: a page
// that takes a twin gets a frame another page gave back, whose memory the
// kernel has already faulted in (a never-touched frame costs a first-touch
// fault, ~1-5 us on the VMs measured, on every new page's first write). The
// memory of free frames is kept up to a bound; a release that would go beyond
// gives back the memory of all the frames it frees.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ito::dist::detail {

class twin_frames {
 public:
  // Room for a twin of each of `pages` pages (reserved, not committed);
  // at most `kept_max` free frames keep their memory.
  twin_frames(std::size_t pages, std::size_t kept_max);
  ~twin_frames();
  twin_frames(const twin_frames&) = delete;
  twin_frames& operator=(const twin_frames&) = delete;

  // The page's twin: its frame, or a free one it takes now (contents undefined).
  char* take(std::size_t page) noexcept {
    if (!frame_of_[page]) frame_of_[page] = pop_free() + 1;
    return of(page);
  }
  // The page's twin, null if it holds none (a page a write checkout
  // overwrites whole has none).
  char* of(std::size_t page) const noexcept {
    return frame_of_[page] ? at(frame_of_[page] - 1) : nullptr;
  }

  // The frames of list[k] where released(list[k]) go back; their memory is
  // kept unless the free frames would then keep more than kept_max.
  template <class Released>
  void give_back(const std::size_t* list, std::size_t count, Released&& released) {
    std::size_t n = 0;
    for (std::size_t k = 0; k < count; ++k)
      if (released(list[k]) && frame_of_[list[k]]) returning_[n++] = frame_of_[list[k]] - 1;
    for (std::size_t k = 0; k < count; ++k)
      if (released(list[k])) frame_of_[list[k]] = 0;
    give_back_frames(n);
  }

  // Free frames whose memory is kept (dsm_stats::twin_pages_kept).
  std::size_t kept() const noexcept { return warm_count_; }

 private:
  char* at(std::size_t frame) const noexcept;
  std::size_t pop_free() noexcept;
  void give_back_frames(std::size_t n) noexcept;

  std::size_t pages_, kept_max_;
  char* frames_;                  // frame f at frames_ + f * 4 KiB
  std::size_t* frame_of_;         // per page: its frame + 1, 0 for none
  std::size_t* warm_;             // free frames with memory
  std::size_t warm_count_ = 0;
  std::size_t* cold_;             // free frames whose memory was given back
  std::size_t cold_count_ = 0;
  std::size_t never_used_ = 0;    // frames from here on were never taken
  std::size_t* returning_;        // give_back's scratch
};

}  // namespace ito::dist::detail
