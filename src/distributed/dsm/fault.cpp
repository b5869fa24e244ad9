// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/fault.hpp"

#include <sys/mman.h>
#include <ucontext.h>

#include <cerrno>
#include <mutex>

#include "arch/fault_access.hpp"
#include "distributed/dsm/diffs.hpp"
#include "distributed/dsm/directory.hpp"
#include "distributed/dsm/fetch.hpp"
#include "distributed/dsm/node_layout.hpp"

namespace ito::dist::detail {

// A fault on `page` (write: a store), with d.lock held. Another thread may
// have served the same page meanwhile: then there is nothing left to do.
void serve_fault(dsm& d, std::size_t page, bool write) {
  const page_state s = d.state.of(page);
  if (s == modified || s == pinned || s == home || s == home_hot) return;
  if ((s == shared || s == home_watched || s == home_read) && !write) return;
  if (s == home_read) {  // unwatched: notified as written when a reader comes
    protect(d, page, PROT_READ | PROT_WRITE);
    d.state.read_written(page);
    return;
  }
  if (s == home_watched) {  // this home writes a page others read: hot till a release finds
                            // it unchanged
    take_twin(d, page);
    protect(d, page, PROT_READ | PROT_WRITE);
    d.state.heated(page);
    d.modified_list[d.modified_count++] = page;
    ++d.stats.home_write_faults;
    return;
  }
  const int h = home_of(d, page);
  if (on_this_node(d, h)) {
    const bool read_only = !write && h != d.rank;  // another's page: see home_read
    protect(d, page, read_only ? PROT_READ : PROT_READ | PROT_WRITE);
    if (read_only) d.state.touched_read(page);
    else d.state.touched_home(page);
    return;
  }
  if (s == invalid) {
    if (d.fault_block_pages > 1) {
      bring_in_block(d, page);  // shared now, with its block's other missing pages
    } else {
      fetch_as_reader(d, page, h);
      ++d.stats.fetches;
    }
  }
  if (write) {
    make_modified(d, page, modified);
  } else {
    protect(d, page, PROT_READ);
    d.state.fetched(page);
  }
}

namespace {

void chain_to_previous(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_dsm.load(std::memory_order_acquire)->previous;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler == SIG_DFL) {
    signal(sig, SIG_DFL);  // the access faults again and ends the process, as without ito
    return;
  }
  prev.sa_handler(sig);
}

}  // namespace

void on_fault(int sig, siginfo_t* info, void* context) {
  dsm* d = g_dsm.load(std::memory_order_acquire);
  char* at = static_cast<char*>(info->si_addr);
  std::size_t page = 0;
  if (!d || !page_at(*d, at, &page)) {
    if (d) chain_to_previous(sig, info, context);
    else signal(sig, SIG_DFL);
    return;
  }
  const int saved = errno;
  const bool write = arch::fault_was_write(static_cast<const ucontext_t*>(context));
  {
    std::lock_guard hold(d->lock);
    serve_fault(*d, page, write);
  }
  errno = saved;
}

}  // namespace ito::dist::detail
