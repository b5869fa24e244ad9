// SPDX-License-Identifier: Apache-2.0
// C++ thread_local objects with destructors per thread (issue 42,
// ITO_ULT_TLS=1): each thread constructs a namespace-scope and a
// function-local thread_local on first use, fills a thread_local vector
// across yields and sleeps (which may move it to another worker), and ends by
// returning or by pthread_exit. NPTL destroys the thread_locals in reverse
// order of construction when the thread ends (__call_tls_dtors), then runs
// pthread_key destructors; each thread's log must say the same on ULTs.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int threads = 6;
std::string logs[threads];
int ids[threads];
pthread_key_t key;
thread_local int my_id = -1;

struct tracer {
  std::string name;
  explicit tracer(const char* n) : name(n) { logs[my_id] += " +" + name; }
  ~tracer() { logs[my_id] += " -" + name + "(" + std::to_string(my_id) + ")"; }
};

thread_local tracer first("first");
thread_local std::vector<int> numbers;

void key_destructor(void* p) { logs[*static_cast<int*>(p)] += " key"; }

void* run(void* arg) {
  my_id = static_cast<int>(reinterpret_cast<long>(arg));
  ids[my_id] = my_id;
  pthread_setspecific(key, &ids[my_id]);
  logs[my_id] += " start";
  (void)first.name.size();  // constructs `first` in this thread
  thread_local tracer second("second");
  (void)second;
  for (int i = 0; i < 100; ++i) {
    numbers.push_back(i);
    if (i % 2) sched_yield();
    else usleep(10);
  }
  long sum = 0;
  for (int v : numbers) sum += v;
  logs[my_id] += " sum=" + std::to_string(sum) + " own=" + (first.name == "first" ? "yes" : "no");
  if (my_id == threads - 1) pthread_exit(nullptr);  // unwinds: the destructors run as well
  return nullptr;
}

}  // namespace

int main() {
  pthread_key_create(&key, key_destructor);
  pthread_t t[threads];
  for (long i = 0; i < threads; ++i) pthread_create(&t[i], nullptr, run, reinterpret_cast<void*>(i));
  for (int i = 0; i < threads; ++i) pthread_join(t[i], nullptr);
  for (int i = 0; i < threads; ++i) std::printf("thread %d:%s\n", i, logs[i].c_str());
  return 0;
}
