// SPDX-License-Identifier: Apache-2.0
#include "sched/overflow.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "sched/scheduler.hpp"

namespace ito::sched {
namespace {

struct sigaction g_previous {};
std::mutex g_install_lock;
// Set while this thread hands a fault on: a handler that chains back here
// (the DSM's, installed over ours and later under it) must not loop.
thread_local bool t_handing_on = false;
thread_local stack_t t_previous_altstack{};

// Async-signal-safe formatting: append text or a decimal number.
struct line {
  char buf[256];
  std::size_t len = 0;
  void text(const char* s) {
    while (*s && len < sizeof buf) buf[len++] = *s++;
  }
  void number(std::uint64_t v) {
    char digits[24];
    int n = 0;
    do digits[n++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
    while (n > 0 && len < sizeof buf) buf[len++] = digits[--n];
  }
};

// The kernel keeps this much unmapped below a growing OS stack (stack_guard_gap).
constexpr std::uintptr_t os_stack_gap = 1024 * 1024;

// Did u run off the stack it runs on? A pool stack's guard, or below an OS
// thread's stack (the main ULT's, and a child it joined inline).
bool overflowed(const ult* u, const void* address) {
  const ult* on = u->inline_host ? u->inline_host : u;
  if (on->stack) return stack::stack_pool::in_guard_of(on->stack, address);
  const stack::stack_block& s = stack_of(u);  // the main ULT's OS stack, if known
  if (!s) return false;
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  const auto lo = reinterpret_cast<std::uintptr_t>(s.lo);
  return a < lo && lo - a <= os_stack_gap;
}

void on_segv(int sig, siginfo_t* info, void* context) {
  worker* w = current_worker();
  ult* u = w ? w->current : nullptr;
  if (u && overflowed(u, info->si_addr)) {
    line l;
    l.text("ito: stack overflow in ULT ");
    l.number(u->id);
    l.text(" (stack ");
    l.number(stack_of(u).size());
    if (u->inline_host) {
      l.text(" bytes), on the stack of ULT ");
      l.number(u->inline_host->id);
      l.text(", which joined it before it started and ran it inline\n");
    } else if (!u->stack) {
      l.text(" bytes: the OS thread's); raise `ulimit -s`\n");
    } else if (u->stack_from == stack_origin::dedicated) {
      // Its creator chose the size: ITO_STACK_SIZE would change nothing.
      l.text(" bytes); raise the stack size its thread was created with\n");
    } else {
      l.text(" bytes); raise ITO_STACK_SIZE or options.stack_size\n");
    }
    [[maybe_unused]] auto r = write(STDERR_FILENO, l.buf, l.len);
    signal(SIGABRT, SIG_DFL);
    abort();
  }
  // Not ours: hand it on, once.
  if (!t_handing_on) {
    struct handing_on {
      handing_on() { t_handing_on = true; }
      ~handing_on() { t_handing_on = false; }
    } once;
    if (g_previous.sa_flags & SA_SIGINFO) {
      if (g_previous.sa_sigaction) {
        g_previous.sa_sigaction(sig, info, context);
        return;
      }
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
      g_previous.sa_handler(sig);
      return;
    }
  }
  // Default action: uninstall ourselves and let the fault happen again.
  signal(SIGSEGV, SIG_DFL);
}

}  // namespace

void install_overflow_handler() {
  // At every start, not once: whoever installed a handler since (MPI's,
  // restored when the DSM stopped) would otherwise keep overflow reports
  // from a later runtime. Ours goes first again and hands other faults on.
  std::lock_guard hold(g_install_lock);
  struct sigaction current {};
  sigaction(SIGSEGV, nullptr, &current);
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == &on_segv) return;
  struct sigaction sa {};
  sa.sa_sigaction = &on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_previous);
}

void* install_overflow_altstack() {
  void* mem = mmap(nullptr, altstack_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = altstack_bytes;
  if (sigaltstack(&ss, &t_previous_altstack) != 0) {
    munmap(mem, altstack_bytes);
    return nullptr;
  }
  return mem;
}

void remove_overflow_altstack(void* altstack) {
  if (!altstack) return;
  // Give back whatever stack was there before (a sanitizer's, say).
  stack_t ss = t_previous_altstack;
  if (ss.ss_sp == nullptr) ss.ss_flags = SS_DISABLE;
  sigaltstack(&ss, nullptr);
  munmap(altstack, altstack_bytes);
}

}  // namespace ito::sched
