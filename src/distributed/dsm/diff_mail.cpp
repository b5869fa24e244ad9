// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/diff_mail.hpp"

#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "distributed/dsm/dsm.hpp"
#include "distributed/dsm/dsm_bookkeeping.hpp"
#include "distributed/dsm/transport.hpp"

namespace ito::dist::detail {
namespace {

// A home's batch is sent early past this size (MPI counts are ints; and a
// release of a whole large array should not double its memory in one buffer).
constexpr std::size_t most_batch_words = (std::size_t{64} << 20) / 8;

}  // namespace

// A rank's mail (dsm::mail_state). A batch is a sequence of records, each
// [window offset][length][bytes, padded to a word], in 64-bit words.
struct mailbox {
  char* window = nullptr;
  std::size_t bytes = 0;
  // Outgoing, per home: written only by releases, which the DSM lock orders.
  std::vector<std::vector<std::uint64_t>> batches;
  std::uint64_t sent = 0;  // messages since the last deliver_diffs returned
  bool queued = false;     // a batch holds something
  bool (*progress_running)() noexcept = nullptr;
};

namespace {

void apply_batch(const mailbox* g, const std::vector<std::uint64_t>& batch, int from) {
  for (std::size_t k = 0; k + 2 <= batch.size();) {
    const std::uint64_t at = batch[k], length = batch[k + 1];
    const std::size_t words = (length + 7) / 8;
    if (at > g->bytes || length > g->bytes - at || k + 2 + words > batch.size()) {
      std::fprintf(stderr,
                   "ito: dsm: a diff from rank %d lies outside the DSM region (offset %llu, "
                   "%llu bytes): the ranks disagree on the region\n",
                   from, static_cast<unsigned long long>(at),
                   static_cast<unsigned long long>(length));
      std::abort();
    }
    std::memcpy(g->window + at, &batch[k + 2], length);
    k += 2 + words;
  }
}

}  // namespace

void serve_diffs(dsm& d) {
  if (!d.mail_state) return;
  thread_local std::vector<std::uint64_t> inbox;
  for (;;) {
    bool got = false;
    int from = 0;
    if (!transport::receive_mail(inbox, &from, &got)) mpi_failed("receiving diffs");
    if (!got) return;
    apply_batch(d.mail_state, inbox, from);
    if (!transport::acknowledge_mail(from)) mpi_failed("acknowledging diffs");
  }
}

namespace {

bool all_delivered(void*) {
  bool done = false;
  if (!transport::mail_delivered(&done)) mpi_failed("waiting for MPI");
  return done;
}

// Sends each home its batch and waits until every home applied it.
void send_queued(dsm& d) {
  mailbox* g = d.mail_state;
  g->queued = false;
  for (std::size_t home = 0; home < g->batches.size(); ++home) {
    auto& batch = g->batches[home];
    if (batch.empty()) continue;
    if (!transport::send_mail(static_cast<int>(home), batch.data(), batch.size()))
      mpi_failed("sending diffs to their home");
    ++g->sent;
  }
  // Waiting, this thread applies what other ranks send meanwhile: two ranks
  // releasing to each other while their progress threads wait on something
  // else (a release of their own, for the DSM lock) still finish.
  wait_serving_diffs(&d, &all_delivered, nullptr);
  for (auto& batch : g->batches) batch.clear();
}

}  // namespace

void wait_serving_diffs(dsm* d, bool (*done)(void*), void* arg) {
  for (int tries = 0;; ++tries) {
    if (done(arg)) return;
    if (d) serve_diffs(*d);
    if (tries > 64) sched_yield();  // more ranks than cores: let the others run
  }
}

void start_diff_mail(dsm& d, char* window, std::size_t bytes,
                     bool (*progress_running)() noexcept) {
  auto* g = new mailbox;
  g->window = window;
  g->bytes = bytes;
  g->batches.resize(static_cast<std::size_t>(d.ranks));
  g->progress_running = progress_running;
  if (!transport::open_mail(d.ranks)) mpi_failed("opening the diff mail");
  d.mail_state = g;
}

void stop_diff_mail(dsm& d) noexcept {
  if (!d.mail_state) return;
  transport::close_mail();
  delete d.mail_state;
  d.mail_state = nullptr;
}

bool diff_mail_open(const dsm& d) noexcept {
  return d.mail_state != nullptr && d.mail_state->progress_running();
}

void queue_diff(dsm& d, int home, std::size_t at, const char* bytes, std::size_t length) {
  mailbox* g = d.mail_state;
  auto& batch = g->batches[static_cast<std::size_t>(home)];
  const std::size_t start = batch.size();
  batch.resize(start + 2 + (length + 7) / 8);
  batch[start] = at;
  batch[start + 1] = length;
  std::memcpy(&batch[start + 2], bytes, length);
  g->queued = true;
  if (batch.size() > most_batch_words) send_queued(d);
}

std::uint64_t deliver_diffs(dsm& d) {
  mailbox* g = d.mail_state;
  if (g->queued) send_queued(d);
  const std::uint64_t sent = g->sent;
  g->sent = 0;
  return sent;
}

}  // namespace ito::dist::detail
