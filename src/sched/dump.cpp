// SPDX-License-Identifier: Apache-2.0
// ito::dump_ults and ITO_DUMP_SIGNAL: the live ULTs, listed on request. The
// signal handler only writes a byte to a pipe (async-signal-safe); a thread of
// ito's reads it and writes the list, which takes locks and calls stdio.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/environment.hpp"
#include "common/setting_values.hpp"
#include "ito/runtime.hpp"
#include "sched/deadlock.hpp"
#include "sched/runtime_control.hpp"
#include "sched/scheduler.hpp"
#include "sched/ult_report.hpp"

namespace ito {

std::size_t dump_ults(std::FILE* out) {
  std::lock_guard hold(sched::dump_lock());
  sched::runtime_state* rt = sched::g_runtime.load(std::memory_order_acquire);
  if (!rt) return 0;
  std::fprintf(out, "ito: live ULTs of the runtime (%zu workers):\n", rt->workers.size());
  std::size_t n = sched::report_live_ults(rt, out);
  std::fprintf(out, "ito: %zu live ULT(s)\n", n);
  std::fflush(out);
  return n;
}

}  // namespace ito

namespace ito::sched {

std::mutex& dump_lock() noexcept {
  static std::mutex m;
  return m;
}

namespace {

int g_dump_pipe[2] = {-1, -1};

void on_dump_signal(int) {
  int saved = errno;
  char byte = 1;
  [[maybe_unused]] ssize_t n = write(g_dump_pipe[1], &byte, 1);
  errno = saved;
}

void* dump_thread(void*) {
  pthread_setname_np(pthread_self(), "ito-dump");
  helper_thread_begins();  // it only reads: the deadlock watch knows it
  char byte;
  for (;;) {
    ssize_t n = read(g_dump_pipe[0], &byte, 1);
    if (n == 1) dump_ults(stderr);
    else if (n < 0 && errno != EINTR) return nullptr;
  }
}

}  // namespace

void install_dump_signal() {
  static bool installed = false;  // once per process; the thread outlives runtimes
  const char* v = config::text_setting(config::setting_id::dump_signal);
  if (installed || !v) return;
  int sig = dump_signal_from(v);  // checked by resolve_options already
  if (sig == 0) return;
  if (pipe2(g_dump_pipe, O_CLOEXEC) != 0) return;
  // Never block in the handler: not when signals come faster than dumps, nor
  // in a forked child, where no thread reads the pipe.
  fcntl(g_dump_pipe[1], F_SETFL, O_NONBLOCK);
  pthread_t t;
  if (pthread_create(&t, nullptr, &dump_thread, nullptr) != 0) return;
  pthread_detach(t);
  struct sigaction sa {};
  sa.sa_handler = &on_dump_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
  installed = true;
}

}  // namespace ito::sched
