// SPDX-License-Identifier: Apache-2.0
// The DSM's transport over MPI RMA (transport.hpp: what each operation
// promises). Two windows, each locked once for every rank at their start
// (MPI_Win_lock_all, MPI_MODE_NOCHECK): every operation is a passive-target
// one, completed by MPI_Win_flush to its target.
#include "distributed/dsm/transport.hpp"

#include <mpi.h>

#include <cstring>

#include "common/setting_values.hpp"
#include "distributed/peer_watch.hpp"

namespace ito::dist::detail::transport {
namespace {

// Written by open_windows and close_windows only, which no operation overlaps.
MPI_Win data_window = MPI_WIN_NULL;
MPI_Win directory_window = MPI_WIN_NULL;

// Open MPI before 4.1.5 only: this rank's own directory entries take their
// compare-and-swap in memory (decide_own_cas), at `own_entries`.
bool own_cas_in_memory = false;
int own_rank = -1;
std::int64_t* own_entries = nullptr;

MPI_Win of(window w) noexcept { return w == window::data ? data_window : directory_window; }

MPI_Aint disp(std::size_t at) noexcept { return static_cast<MPI_Aint>(at); }

constexpr int mail_tag = 0x172;
constexpr int acknowledged_tag = 0x173;
// The mail's: its communicator (open_mail to close_mail), and the requests
// of the mail in flight (the releasing thread's, under the DSM lock).
MPI_Comm mail_comm = MPI_COMM_NULL;
std::vector<MPI_Request> mail_requests;

// Open MPI 4.1.0-4.1.4's osc/rdma sends an MPI_Compare_and_swap aimed at the
// caller's own rank to its BTL with the endpoint it has for itself, which
// btl/vader (shared memory) does not have: a null pointer, a SIGSEGV in
// mca_btl_vader_send (15 lines of plain MPI do it; 4.1.5 fixed it upstream
// by doing CASes between ranks of one host in memory). Where every rank is on
// this host, osc/rdma carries out the others' CASes on this rank's words as
// CPU atomics (btl/vader's emulated atomics run them in this process's
// progress; with XPMEM, osc/rdma's CPU atomics), so a CPU compare-and-swap of
// our own is atomic with theirs. Over several hosts the others' may be the
// network card's: no such shortcut, and the job needs osc/ucx
// (docs/DISTRIBUTED.md, "Open MPI"). Where OMPI_MCA_osc rules osc/rdma out,
// the CAS goes through MPI as with any other MPI. Collective.
void decide_own_cas() {
#if defined(OPEN_MPI) && (OMPI_MAJOR_VERSION < 4 || (OMPI_MAJOR_VERSION == 4 && (OMPI_MINOR_VERSION == 0 || \
                                                   (OMPI_MINOR_VERSION == 1 && OMPI_RELEASE_VERSION < 5))))
  const char* osc = config::foreign_variable("OMPI_MCA_osc");
  MPI_Comm host = MPI_COMM_NULL;
  int on_host = 0, ranks = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  MPI_Comm_size(host, &on_host);
  MPI_Comm_free(&host);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // osc/rdma may be chosen: no OMPI_MCA_osc, one naming it, or one that
  // excludes others ("^ucx") but not it.
  const bool rdma_possible =
      !osc || (osc[0] == '^' ? !std::strstr(osc, "rdma") : std::strstr(osc, "rdma") != nullptr);
  own_cas_in_memory = on_host == ranks && rdma_possible;
#endif
}

}  // namespace

bool open_windows(char* data, std::size_t data_bytes, std::int64_t* entries,
                  std::size_t entry_count) {
  if (MPI_Win_create(data, disp(data_bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &data_window) !=
          MPI_SUCCESS ||
      MPI_Win_create(entries, disp(entry_count * sizeof(std::int64_t)), sizeof(std::int64_t),
                     MPI_INFO_NULL, MPI_COMM_WORLD, &directory_window) != MPI_SUCCESS ||
      MPI_Win_lock_all(MPI_MODE_NOCHECK, data_window) != MPI_SUCCESS ||
      MPI_Win_lock_all(MPI_MODE_NOCHECK, directory_window) != MPI_SUCCESS ||
      MPI_Comm_rank(MPI_COMM_WORLD, &own_rank) != MPI_SUCCESS)
    return false;
  own_entries = entries;
  decide_own_cas();
  return true;
}

void close_windows() noexcept {
  MPI_Win_unlock_all(data_window);
  MPI_Win_unlock_all(directory_window);
  MPI_Win_free(&data_window);
  MPI_Win_free(&directory_window);
}

bool get(int target, std::size_t at, void* into, std::size_t bytes) {
  const int n = static_cast<int>(bytes);
  return MPI_Get(into, n, MPI_BYTE, target, disp(at), n, MPI_BYTE, data_window) == MPI_SUCCESS;
}

bool put_runs(int target, std::size_t at, const char* from, const int* run_at,
              const int* run_length, int runs) {
  if (runs == 1)  // one stretch of bytes (the usual case): no type to build
    return MPI_Put(from + run_at[0], run_length[0], MPI_BYTE, target, disp(at) + run_at[0],
                   run_length[0], MPI_BYTE, data_window) == MPI_SUCCESS;
  // One put per page, its runs described by an indexed type on both sides:
  // a put per run (up to 2048 for interleaved writers) costs a round of
  // bookkeeping each, and MPICH 4.0 over UCX's shared-memory transports lost
  // some of a thousand outstanding one-byte puts here (tests/distributed
  // merge test).
  MPI_Datatype runs_type;
  if (MPI_Type_indexed(runs, run_length, run_at, MPI_BYTE, &runs_type) != MPI_SUCCESS ||
      MPI_Type_commit(&runs_type) != MPI_SUCCESS)
    return false;
  const bool ok =
      MPI_Put(from, 1, runs_type, target, disp(at), 1, runs_type, data_window) == MPI_SUCCESS;
  MPI_Type_free(&runs_type);  // MPI keeps it alive until the put completes
  return ok;
}

bool or_words(int target, std::size_t at, const std::uint64_t* bits, std::size_t count) {
  const int n = static_cast<int>(count);
  return MPI_Accumulate(bits, n, MPI_UINT64_T, target, disp(at), n, MPI_UINT64_T, MPI_BOR,
                        data_window) == MPI_SUCCESS;
}

bool read_words(int target, std::size_t at, std::uint64_t* into, std::size_t count) {
  const int n = static_cast<int>(count);
  return MPI_Get_accumulate(nullptr, 0, MPI_UINT64_T, into, n, MPI_UINT64_T, target, disp(at), n,
                            MPI_UINT64_T, MPI_NO_OP, data_window) == MPI_SUCCESS;
}

bool read_entries(int target, std::size_t index, std::int64_t* into, std::size_t count) {
  const int n = static_cast<int>(count);
  return MPI_Get_accumulate(nullptr, 0, MPI_INT64_T, into, n, MPI_INT64_T, target, disp(index),
                            n, MPI_INT64_T, MPI_NO_OP, directory_window) == MPI_SUCCESS;
}

bool claim_entry(int target, std::size_t index, const std::int64_t* mine, std::int64_t* found) {
  static constexpr std::int64_t none = 0;  // static: alive until the flush
  if (own_cas_in_memory && target == own_rank) {  // complete at once (decide_own_cas)
    std::int64_t expected = none;
    __atomic_compare_exchange_n(&own_entries[index], &expected, *mine, false, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    *found = expected;
    return true;
  }
  return MPI_Compare_and_swap(mine, &none, found, MPI_INT64_T, target, disp(index),
                              directory_window) == MPI_SUCCESS;
}

bool flush(window w, int target) { return MPI_Win_flush(target, of(w)) == MPI_SUCCESS; }

bool open_mail(int ranks) {
  if (MPI_Comm_dup(MPI_COMM_WORLD, &mail_comm) != MPI_SUCCESS) return false;
  name_mpi_failures(mail_comm);
  mail_requests.reserve(2 * static_cast<std::size_t>(ranks));
  return true;
}

void close_mail() noexcept {
  MPI_Comm_free(&mail_comm);
  mail_requests = {};
}

bool send_mail(int home, const std::uint64_t* words, std::size_t count) {
  mail_requests.emplace_back();
  if (MPI_Irecv(nullptr, 0, MPI_BYTE, home, acknowledged_tag, mail_comm,
                &mail_requests.back()) != MPI_SUCCESS)
    return false;
  mail_requests.emplace_back();
  return MPI_Isend(words, static_cast<int>(count), MPI_UINT64_T, home, mail_tag, mail_comm,
                   &mail_requests.back()) == MPI_SUCCESS;
}

bool mail_delivered(bool* done) {
  int all = 0;
  if (MPI_Testall(static_cast<int>(mail_requests.size()), mail_requests.data(), &all,
                  MPI_STATUSES_IGNORE) != MPI_SUCCESS)
    return false;
  *done = all != 0;
  if (*done) mail_requests.clear();
  return true;
}

bool receive_mail(std::vector<std::uint64_t>& into, int* from, bool* got) {
  int flag = 0;
  MPI_Message message;
  MPI_Status status;
  *got = false;
  if (MPI_Improbe(MPI_ANY_SOURCE, mail_tag, mail_comm, &flag, &message, &status) != MPI_SUCCESS)
    return false;
  if (!flag) return true;
  int count = 0;
  MPI_Get_count(&status, MPI_UINT64_T, &count);
  into.resize(static_cast<std::size_t>(count));
  if (MPI_Mrecv(into.data(), count, MPI_UINT64_T, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return false;
  *from = status.MPI_SOURCE;
  *got = true;
  return true;
}

bool acknowledge_mail(int to) {
  return MPI_Send(nullptr, 0, MPI_BYTE, to, acknowledged_tag, mail_comm) == MPI_SUCCESS;
}

}  // namespace ito::dist::detail::transport
