// SPDX-License-Identifier: Apache-2.0
// Where a DSM page is, and with what access: the application's view (the
// region, then the globals), this rank's alias and its node's, the node a
// rank belongs to, and the view's protections, changed a run of pages at a
// time (every run of pages with one protection is a mapping of its own).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

#include "distributed/dsm/dsm_bookkeeping.hpp"

namespace ito::dist::detail {

// Where page `page` is in the application's view.
inline char* view_of(const dsm& d, std::size_t page) noexcept {
  return page < d.region_pages ? d.view + page * page_bytes
                               : d.globals + (page - d.region_pages) * page_bytes;
}

// The page holding `at`, if the DSM manages it (the region, or the globals).
inline bool page_at(const dsm& d, const char* at, std::size_t* page) noexcept {
  if (at >= d.view && at < d.view + d.region_pages * page_bytes) {
    *page = static_cast<std::size_t>(at - d.view) / page_bytes;
    return true;
  }
  if (d.globals && at >= d.globals && at < d.globals + (d.pages - d.region_pages) * page_bytes) {
    *page = d.region_pages + static_cast<std::size_t>(at - d.globals) / page_bytes;
    return true;
  }
  return false;
}

// Where sharing word `word` lies in the data window.
inline std::size_t sharing_disp(const dsm& d, std::size_t word) noexcept {
  return d.sharing_at + word * sizeof(std::uint64_t);
}

// Whether rank h is of this rank's node (h itself, with one node per rank).
inline bool on_this_node(const dsm& d, int h) noexcept {
  return d.node_of_rank[static_cast<std::size_t>(h)] == d.node;
}

// Where this rank's copy of `page`, whose home it knows, is: the node's
// memory for a page homed on this node, else its own.
inline char* copy_of(const dsm& d, std::size_t page) noexcept {
  const bool node_page = d.node_homes && on_this_node(d, d.home_plus1[page] - 1);
  return (node_page ? d.node_alias : d.alias) + page * page_bytes;
}

// A change of the view's mappings failed (errno says why): ends the process.
[[gnu::noipa]] void mapping_failed(const dsm& d, const char* call);

// Pages [page, page + pages), all in the region or all in the globals.
// Every run of pages with one protection is a mapping of its own to Linux,
// which allows vm.max_map_count of them per process (65530 by default).
inline void protect(dsm& d, std::size_t page, int prot, std::size_t pages = 1) {
  if (mprotect(view_of(d, page), pages * page_bytes, prot) != 0) mapping_failed(d, "mprotect");
}

// The region and the globals, whole.
void protect_all(dsm& d, int prot);

// Node homes: pages [first, first + pages), just found to be homed on this
// node, are mapped from the node's memory (no access yet, as before).
void map_from_node(dsm& d, std::size_t first, std::size_t pages = 1);

// Calls each(first, count, value) for every run of pages of the ascending
// list whose value_of(page) is the same and not `none`, consecutive and in one
// area (the region or the globals): what one mprotect or madvise covers.
template <class ValueOf, class Each>
void for_each_listed_run(const dsm& d, const std::size_t* pages, std::size_t n, int none,
                         ValueOf&& value_of, Each&& each) {
  std::size_t k = 0;
  while (k < n) {
    const int value = value_of(pages[k]);
    std::size_t end = k + 1;
    if (value != none) {
      while (end < n && pages[end] == pages[end - 1] + 1 && pages[end] != d.region_pages &&
             value_of(pages[end]) == value)
        ++end;
      each(pages[k], pages[end - 1] - pages[k] + 1, value);
    }
    k = end;
  }
}

// Pages to make read-write, one mprotect per run of neighbours: each page
// either goes at once (no batch) or joins the run, which flush() protects.
class writable_runs {
 public:
  explicit writable_runs(dsm& d, int prot = PROT_READ | PROT_WRITE) : d_(d), prot_(prot) {}
  writable_runs(const writable_runs&) = delete;
  writable_runs& operator=(const writable_runs&) = delete;
  void add(std::size_t page) {
    if (count_ && page == first_ + count_ && page != d_.region_pages) {
      ++count_;
      return;
    }
    flush();
    first_ = page;
    count_ = 1;
  }
  void flush() {
    if (count_) protect(d_, first_, prot_, count_);
    count_ = 0;
  }

 private:
  dsm& d_;
  int prot_;
  std::size_t first_ = 0, count_ = 0;
};

inline void make_writable(dsm& d, std::size_t page, writable_runs* batch) {
  if (batch) batch->add(page);
  else protect(d, page, PROT_READ | PROT_WRITE);
}

}  // namespace ito::dist::detail
