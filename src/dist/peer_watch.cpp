// SPDX-License-Identifier: Apache-2.0
#include "dist/peer_watch.hpp"

#include <mpi.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace ito::dist::detail {
namespace {

struct peer_identity {
  std::int32_t pid;
  char host[64];
};

struct watched_peer {
  int rank;
  int pid;
  int pidfd;
};

struct watch {
  int me = 0;
  char host[64] = {};
  int stop_fd = -1;  // an eventfd: written to end the thread
  std::vector<watched_peer> peers;
  std::thread thread;
};
watch* g_watch = nullptr;

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

void watch_loop(watch* w) {
  std::vector<pollfd> fds;
  fds.push_back({w->stop_fd, POLLIN, 0});
  for (const watched_peer& p : w->peers) fds.push_back({p.pidfd, POLLIN, 0});
  for (;;) {
    if (poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
    if (fds[0].revents) return;
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      const watched_peer& p = w->peers[i - 1];
      std::fprintf(stderr,
                   "ito: dist: rank %d (pid %d on %s) ended while the distributed runtime was "
                   "running (killed, crashed or exited early); rank %d stops the job\n",
                   p.rank, p.pid, w->host, w->me);
      std::fflush(stderr);
      let_the_launcher_forward_stderr();
      MPI_Abort(MPI_COMM_WORLD, 3);
      _exit(3);  // an MPI whose abort returned
    }
  }
}

}  // namespace

void start_peer_watch(int rank, int size) {
  auto* w = new watch;
  w->me = rank;
  gethostname(w->host, sizeof w->host - 1);
  peer_identity mine{};
  mine.pid = static_cast<std::int32_t>(getpid());
  std::memcpy(mine.host, w->host, sizeof mine.host);
  std::vector<peer_identity> all(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r) {
    const peer_identity& p = all[static_cast<std::size_t>(r)];
    if (r == rank || std::strncmp(p.host, w->host, sizeof p.host) != 0) continue;
    // Another host's processes (or a pid from another pid namespace, which
    // pidfd_open refuses or that names no process) are left to the launcher.
    const int fd = open_pidfd(p.pid);
    if (fd >= 0) w->peers.push_back({r, p.pid, fd});
  }
  w->stop_fd = eventfd(0, EFD_CLOEXEC);
  if (w->peers.empty() || w->stop_fd < 0) {
    for (const watched_peer& p : w->peers) close(p.pidfd);
    if (w->stop_fd >= 0) close(w->stop_fd);
    delete w;
    return;
  }
  w->thread = std::thread(watch_loop, w);
  pthread_setname_np(w->thread.native_handle(), "ito-peer-watch");
  g_watch = w;
}

void stop_peer_watch() noexcept {
  watch* w = g_watch;
  if (!w) return;
  g_watch = nullptr;
  const std::uint64_t one = 1;
  if (write(w->stop_fd, &one, sizeof one) < 0) {
  }
  w->thread.join();
  for (const watched_peer& p : w->peers) close(p.pidfd);
  close(w->stop_fd);
  delete w;
}

}  // namespace ito::dist::detail
