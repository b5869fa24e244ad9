// SPDX-License-Identifier: Apache-2.0
// C++ exceptions in threads that switch inside their handlers: every thread
// throws, and while in its catch block (and in a destructor run by the
// unwinding) waits at a barrier, so that all the others throw and catch
// meanwhile; on one worker they all interleave there. Each must find its own
// exception afterwards: std::current_exception, a bare `throw;`,
// std::uncaught_exceptions. Under libito-preload.so the program's libstdc++
// is not the library's own (it links its own, hidden), and the switch must
// carry this one's per-thread exception globals too (sched/program_eh.hpp).
// Uses pthread_create, not std::thread, so that the source-mode build
// (-include ito/pthread.h) runs its threads as ULTs too.
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace {

constexpr int threads = 4;
constexpr int rounds = 20;
pthread_barrier_t barrier;

struct failures {
  int count = 0;
  char first[200] = "";
  void add(int thread, int round, const char* what) {
    if (count++ == 0)
      std::snprintf(first, sizeof first, "thread %d round %d: %s", thread, round, what);
  }
};

// Waits during unwinding: the exception in flight stays this thread's.
struct waits_while_unwinding {
  int thread, round;
  failures* f;
  ~waits_while_unwinding() {
    const int before = std::uncaught_exceptions();
    pthread_barrier_wait(&barrier);
    const int after = std::uncaught_exceptions();
    if (before != 1 || after != 1) f->add(thread, round, "uncaught_exceptions while unwinding");
  }
};

void* body(void* arg) {
  const int me = static_cast<int>(reinterpret_cast<long>(arg));
  auto* f = new failures;
  for (int r = 0; r < rounds; ++r) {
    char name[32];
    std::snprintf(name, sizeof name, "t%dr%d", me, r);
    try {
      throw std::runtime_error(name);
    } catch (const std::runtime_error& e) {
      const std::exception_ptr mine = std::current_exception();
      pthread_barrier_wait(&barrier);  // every thread is in its handler now
      usleep(100 * static_cast<useconds_t>(me));
      if (std::current_exception() != mine) f->add(me, r, "current_exception changed");
      if (std::uncaught_exceptions() != 0) f->add(me, r, "uncaught_exceptions in a handler");
      try {
        throw;  // the exception being handled: this thread's
      } catch (const std::runtime_error& again) {
        if (&again != &e || std::strcmp(name, again.what()) != 0)
          f->add(me, r, "throw; rethrew another");
      }
    }
    try {
      waits_while_unwinding w{me, r, f};
      throw r;
    } catch (int caught) {
      if (caught != r) f->add(me, r, "caught another int");
    }
    if (std::current_exception()) f->add(me, r, "an exception left after its handler");
  }
  // A failure travels to the joiner as an exception_ptr in the result.
  if (f->count) {
    try {
      throw std::runtime_error(f->first);
    } catch (...) {
      delete f;
      return new std::exception_ptr(std::current_exception());
    }
  }
  delete f;
  return nullptr;
}

}  // namespace

int main() {
  pthread_barrier_init(&barrier, nullptr, threads);
  pthread_t t[threads];
  for (long i = 0; i < threads; ++i)
    if (pthread_create(&t[i], nullptr, &body, reinterpret_cast<void*>(i)) != 0) return 1;
  int failed = 0;
  for (pthread_t& each : t) {
    void* result = nullptr;
    pthread_join(each, &result);
    if (!result) continue;
    auto* error = static_cast<std::exception_ptr*>(result);
    try {
      std::rethrow_exception(*error);
    } catch (const std::exception& e) {
      std::printf("failed: %s\n", e.what());
      ++failed;
    }
    delete error;
  }
  pthread_barrier_destroy(&barrier);
  std::printf("%d threads x %d rounds: %s\n", threads, rounds,
              failed ? "exception state mixed up" : "each thread kept its own exceptions");
  return 0;
}
