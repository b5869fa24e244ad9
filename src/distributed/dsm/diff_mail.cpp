// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/diff_mail.hpp"

#include <mpi.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "distributed/dsm/dsm.hpp"
#include "distributed/peer_watch.hpp"
#include "distributed/progress.hpp"

namespace ito::dist::detail {
namespace {

constexpr int diff_tag = 0x172;
constexpr int applied_tag = 0x173;
// A home's batch is sent early past this size (MPI counts are ints; and a
// release of a whole large array should not double its memory in one buffer).
constexpr std::size_t most_batch_words = (std::size_t{64} << 20) / 8;

// A batch is a sequence of records, each [window offset][length][bytes,
// padded to a word], in 64-bit words.
struct mail {
  MPI_Comm comm = MPI_COMM_NULL;
  char* window = nullptr;
  std::size_t bytes = 0;
  // Outgoing, per home: written only by releases, which the DSM lock orders.
  std::vector<std::vector<std::uint64_t>> batches;
  std::vector<MPI_Request> requests;
  std::uint64_t sent = 0;  // messages since the last deliver_diffs returned
  bool queued = false;     // a batch holds something
};
mail* g = nullptr;

void apply_batch(const std::vector<std::uint64_t>& batch, int from) {
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

// Applies every batch that has arrived, and acknowledges each. Any thread:
// the matched probe hands each message to exactly one receiver.
void serve_diffs() {
  thread_local std::vector<std::uint64_t> inbox;
  for (;;) {
    int flag = 0;
    MPI_Message message;
    MPI_Status status;
    if (MPI_Improbe(MPI_ANY_SOURCE, diff_tag, g->comm, &flag, &message, &status) != MPI_SUCCESS)
      mpi_failed("probing for diffs");
    if (!flag) return;
    int count = 0;
    MPI_Get_count(&status, MPI_UINT64_T, &count);
    inbox.resize(static_cast<std::size_t>(count));
    if (MPI_Mrecv(inbox.data(), count, MPI_UINT64_T, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      mpi_failed("receiving diffs");
    apply_batch(inbox, status.MPI_SOURCE);
    if (MPI_Send(nullptr, 0, MPI_BYTE, status.MPI_SOURCE, applied_tag, g->comm) != MPI_SUCCESS)
      mpi_failed("acknowledging diffs");
  }
}

// Sends each home its batch and waits until every home applied it.
void send_queued() {
  g->queued = false;
  g->requests.clear();
  for (std::size_t home = 0; home < g->batches.size(); ++home) {
    auto& batch = g->batches[home];
    if (batch.empty()) continue;
    const int to = static_cast<int>(home);
    g->requests.emplace_back();
    if (MPI_Irecv(nullptr, 0, MPI_BYTE, to, applied_tag, g->comm, &g->requests.back()) !=
        MPI_SUCCESS)
      mpi_failed("awaiting a home's acknowledgement");
    g->requests.emplace_back();
    if (MPI_Isend(batch.data(), static_cast<int>(batch.size()), MPI_UINT64_T, to, diff_tag,
                  g->comm, &g->requests.back()) != MPI_SUCCESS)
      mpi_failed("sending diffs to their home");
    ++g->sent;
  }
  // Waiting, this thread applies what other ranks send meanwhile: two ranks
  // releasing to each other while their progress threads wait on something
  // else (a release of their own, for the DSM lock) still finish.
  wait_serving_diffs(static_cast<int>(g->requests.size()), g->requests.data());
  for (auto& batch : g->batches) batch.clear();
}

}  // namespace

void wait_serving_diffs(int count, MPI_Request* requests) {
  for (int tries = 0;; ++tries) {
    int done = 0;
    if (MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
      mpi_failed("waiting for MPI");
    if (done) return;
    if (g) serve_diffs();
    if (tries > 64) sched_yield();  // more ranks than cores: let the others run
  }
}

void start_diff_mail(char* window, std::size_t bytes, int ranks) {
  g = new mail;
  g->window = window;
  g->bytes = bytes;
  g->batches.resize(static_cast<std::size_t>(ranks));
  MPI_Comm_dup(MPI_COMM_WORLD, &g->comm);
  name_mpi_failures(g->comm);
  set_progress_hook(progress_hook::dsm_diffs, &serve_diffs);
}

void stop_diff_mail() noexcept {
  if (!g) return;
  set_progress_hook(progress_hook::dsm_diffs, nullptr);
  MPI_Comm_free(&g->comm);
  delete g;
  g = nullptr;
}

bool diff_mail_open() noexcept { return g != nullptr && progress_running(); }

void queue_diff(int home, std::size_t at, const char* bytes, std::size_t length) {
  auto& batch = g->batches[static_cast<std::size_t>(home)];
  const std::size_t start = batch.size();
  batch.resize(start + 2 + (length + 7) / 8);
  batch[start] = at;
  batch[start + 1] = length;
  std::memcpy(&batch[start + 2], bytes, length);
  g->queued = true;
  if (batch.size() > most_batch_words) send_queued();
}

std::uint64_t deliver_diffs() {
  if (g->queued) send_queued();
  const std::uint64_t sent = g->sent;
  g->sent = 0;
  return sent;
}

}  // namespace ito::dist::detail
