// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/node_layout.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ito::dist::detail {

// A change of the view's mappings failed (errno says why): ends the process.
// Neither declared nor inferred [[noreturn]] (noipa): ASan unpoisons the
// stack before a call to such a function, which maps memory, and at the
// mapping limit that fails, ending the process before this can say why
// (test dsm_more_pages_than_mappings_allowed).
[[gnu::noipa]] void mapping_failed(const dsm& d, const char* call) {
  if (errno == ENOMEM) {
    unsigned long limit = 0;
    if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
      if (std::fscanf(f, "%lu", &limit) != 1) limit = 0;
      std::fclose(f);
    }
    std::fprintf(stderr,
                 "ito: dsm: rank %d reached Linux's limit of memory mappings (vm.max_map_count = "
                 "%lu): every run of DSM pages whose access differs from its neighbours' takes "
                 "one; raise it (sysctl -w vm.max_map_count=1048576) or touch fewer, more "
                 "contiguous pages between fences\n",
                 d.rank, limit);
    std::_Exit(2);
  }
  std::fprintf(stderr, "ito: dsm: %s failed: %s\n", call, std::strerror(errno));
  std::abort();
}

// The region and the globals, whole.
void protect_all(dsm& d, int prot) {
  mprotect(d.view, d.region_pages * page_bytes, prot);
  if (d.globals) mprotect(d.globals, (d.pages - d.region_pages) * page_bytes, prot);
}

// Node homes: pages [first, first + pages), just found to be homed on this
// node, are mapped from the node's memory (no access yet, as before).
void map_from_node(dsm& d, std::size_t first, std::size_t pages) {
  if (!d.node_homes) return;
  if (mmap(view_of(d, first), pages * page_bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, d.node_fd,
           static_cast<off_t>(first * page_bytes)) == MAP_FAILED)
    mapping_failed(d, "mapping a page of the node's memory (mmap)");
}

}  // namespace ito::dist::detail
