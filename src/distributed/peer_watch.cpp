// SPDX-License-Identifier: Apache-2.0
#include "distributed/peer_watch.hpp"

#include <mpi.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/setting_values.hpp"

namespace ito::dist::detail {
namespace {

struct peer_identity {
  std::int32_t pid;
  std::uint64_t pid_namespace;  // its inode: a pid means this process only within it
  char host[64];
};

// The inode of this process's pid namespace (0 if /proc cannot say).
std::uint64_t own_pid_namespace() noexcept {
  struct stat s {};
  return stat("/proc/self/ns/pid", &s) == 0 ? static_cast<std::uint64_t>(s.st_ino) : 0;
}

struct watched_peer {
  int rank;
  int pid;
  int pidfd;
};

// A rank watched by heartbeats: when it was last heard from.
struct beating_peer {
  int rank;
  char host[64];
  std::int64_t last_heard_ns;
  MPI_Request sent = MPI_REQUEST_NULL;
};

constexpr int beat_tag = 0x172;
constexpr int silent_intervals = 10;             // before a peer counts as gone
constexpr std::int64_t min_silence_ns = 3'000'000'000;

struct watch {
  int me = 0;
  char host[64] = {};
  int stop_fd = -1;  // an eventfd: written to end the thread
  std::vector<watched_peer> peers;
  std::vector<beating_peer> beating;
  long heartbeat_ms = 0;
  MPI_Comm comm = MPI_COMM_NULL;  // heartbeats and the last meeting; errors return
  std::thread thread;
};
watch* g_watch = nullptr;

std::int64_t now_ns() noexcept {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

int open_pidfd(int pid) noexcept { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// Under a launcher, stderr is a pipe to its forwarding process, and an abort
// overtakes bytes still in that pipe (hydra dropped the message about 1 run in
// 30 on a loaded machine). Wait, boundedly, until the launcher has read them.
void let_the_launcher_forward_stderr() noexcept {
  for (int waited_ms = 0; waited_ms < 2000; waited_ms += 10) {
    int unread = 0;
    if (ioctl(STDERR_FILENO, FIONREAD, &unread) != 0 || unread == 0) break;
    usleep(10'000);
  }
  usleep(50'000);  // and until it has passed them on
}

[[noreturn]] void stop_the_job(int code) noexcept {
  std::fflush(stderr);
  let_the_launcher_forward_stderr();
  MPI_Abort(MPI_COMM_WORLD, code);
  _exit(code);  // an MPI whose abort returned
}

[[noreturn]] void peer_is_silent(const watch& w, const beating_peer& p, const char* why) {
  std::fprintf(stderr,
               "ito: dist: rank %d (on %s) %s while the distributed runtime was running "
               "(crashed, killed, hung or cut off); rank %d stops the job\n",
               p.rank, p.host, why, w.me);
  stop_the_job(3);
}

// One heartbeat round: a beat to every beating peer whose last one is out,
// every beat that arrived taken, and the silent ones named.
void beat(watch& w) {
  static char payload = 0;
  for (beating_peer& p : w.beating) {
    int done = 1;
    if (p.sent != MPI_REQUEST_NULL && MPI_Test(&p.sent, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      peer_is_silent(w, p, "could not be reached by MPI");
    if (done &&
        MPI_Isend(&payload, 1, MPI_BYTE, p.rank, beat_tag, w.comm, &p.sent) != MPI_SUCCESS)
      peer_is_silent(w, p, "could not be reached by MPI");
  }
  for (;;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, beat_tag, w.comm, &flag, &status) != MPI_SUCCESS || !flag) break;
    char got;
    MPI_Recv(&got, 1, MPI_BYTE, status.MPI_SOURCE, beat_tag, w.comm, MPI_STATUS_IGNORE);
    for (beating_peer& p : w.beating)
      if (p.rank == status.MPI_SOURCE) p.last_heard_ns = now_ns();
  }
  const std::int64_t silence =
      std::max<std::int64_t>(min_silence_ns, silent_intervals * w.heartbeat_ms * 1'000'000);
  const std::int64_t now = now_ns();
  for (const beating_peer& p : w.beating) {
    if (now - p.last_heard_ns > silence) {
      char why[64];
      std::snprintf(why, sizeof why, "has not been heard from for %lld s",
                    static_cast<long long>((now - p.last_heard_ns) / 1'000'000'000));
      peer_is_silent(w, p, why);
    }
  }
}

void watch_loop(watch* w) {
  std::vector<pollfd> fds;
  fds.push_back({w->stop_fd, POLLIN, 0});
  for (const watched_peer& p : w->peers) fds.push_back({p.pidfd, POLLIN, 0});
  const int timeout_ms = w->beating.empty() ? -1 : static_cast<int>(w->heartbeat_ms);
  for (;;) {
    if (!w->beating.empty()) beat(*w);
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) continue;  // EINTR
    if (fds[0].revents) return;
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      const watched_peer& p = w->peers[i - 1];
      std::fprintf(stderr,
                   "ito: dist: rank %d (pid %d on %s) ended while the distributed runtime was "
                   "running (killed, crashed or exited early); rank %d stops the job\n",
                   p.rank, p.pid, w->host, w->me);
      stop_the_job(3);
    }
  }
}

void on_mpi_failure(MPI_Comm* comm, int* code, ...) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(*code, text, &len);
  int me = -1;
  MPI_Comm_rank(*comm, &me);
  std::fprintf(stderr,
               "ito: dist: rank %d: an MPI call of the distributed runtime failed, presumably "
               "because another rank died: %s; rank %d stops the job\n",
               me, text, me);
  stop_the_job(3);
}

}  // namespace

peer_watch_options resolve_peer_watch_options() {
  using config::setting_id;
  peer_watch_options o;
  if (auto ms = config::number_setting(setting_id::dist_heartbeat_ms)) o.heartbeat_ms = static_cast<long>(*ms);
  o.heartbeat_everyone = config::choice_setting(setting_id::dist_watch).value_or(0) == 1;  // auto, heartbeat
  return o;
}

void name_mpi_failures(MPI_Comm comm) {
  static MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  if (handler == MPI_ERRHANDLER_NULL) MPI_Comm_create_errhandler(&on_mpi_failure, &handler);
  MPI_Comm_set_errhandler(comm, handler);
}

void start_peer_watch(int rank, int size, const peer_watch_options& options) {
  auto* w = new watch;
  w->me = rank;
  w->heartbeat_ms = options.heartbeat_ms;
  MPI_Comm_dup(MPI_COMM_WORLD, &w->comm);
  MPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN);
  gethostname(w->host, sizeof w->host - 1);
  peer_identity mine{};
  mine.pid = static_cast<std::int32_t>(getpid());
  mine.pid_namespace = own_pid_namespace();
  std::memcpy(mine.host, w->host, sizeof mine.host);
  std::vector<peer_identity> all(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
  const std::int64_t start = now_ns();
  for (int r = 0; r < size; ++r) {
    const peer_identity& p = all[static_cast<std::size_t>(r)];
    if (r == rank) continue;
    // Another host's processes, or another pid namespace's (where its pid
    // names another process here, or none: the container's init for a rank
    // that is pid 1 in its own), are heard instead.
    const bool same_pids = std::strncmp(p.host, w->host, sizeof p.host) == 0 &&
                           p.pid_namespace == mine.pid_namespace && mine.pid_namespace != 0;
    const int fd = options.heartbeat_everyone || !same_pids ? -1 : open_pidfd(p.pid);
    if (fd >= 0) {
      w->peers.push_back({r, p.pid, fd});
    } else if (w->heartbeat_ms > 0) {
      beating_peer b{r, {}, start};
      std::memcpy(b.host, p.host, sizeof b.host);
      b.host[sizeof b.host - 1] = '\0';
      w->beating.push_back(b);
    }
  }
  w->stop_fd = eventfd(0, EFD_CLOEXEC);
  g_watch = w;
  if ((w->peers.empty() && w->beating.empty()) || w->stop_fd < 0) return;  // nobody to watch
  w->thread = std::thread(watch_loop, w);
  pthread_setname_np(w->thread.native_handle(), "ito-peer-watch");
}

void stop_peer_watch() noexcept {
  watch* w = g_watch;
  if (!w) return;
  // Every rank arrives while the watches still beat: a rank that stopped
  // beating first would seem silent to one still computing.
  MPI_Request all_here;
  MPI_Ibarrier(w->comm, &all_here);
  for (int done = 0; !done;) {
    MPI_Test(&all_here, &done, MPI_STATUS_IGNORE);
    if (!done) usleep(200);
  }
  g_watch = nullptr;
  if (w->thread.joinable()) {
    const std::uint64_t one = 1;
    if (write(w->stop_fd, &one, sizeof one) < 0) {
    }
    w->thread.join();
  }
  // No beat left unmatched at MPI_Finalize: each rank's last ones are out
  // before a second meeting, and taken after it.
  for (beating_peer& p : w->beating) MPI_Wait(&p.sent, MPI_STATUS_IGNORE);
  MPI_Barrier(w->comm);
  for (int flag = 1; flag;) {
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, beat_tag, w->comm, &flag, &status);
    char got;
    if (flag) MPI_Recv(&got, 1, MPI_BYTE, status.MPI_SOURCE, beat_tag, w->comm, MPI_STATUS_IGNORE);
  }
  for (const watched_peer& p : w->peers) close(p.pidfd);
  if (w->stop_fd >= 0) close(w->stop_fd);
  MPI_Comm_free(&w->comm);
  delete w;
}

}  // namespace ito::dist::detail
