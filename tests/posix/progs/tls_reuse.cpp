// SPDX-License-Identifier: Apache-2.0
// Reused TLS blocks (issue 42, ITO_ULT_TLS=1: a worker keeps the blocks of
// threads that ended on it and gives them to the next threads it creates).
// Every thread must start as on NPTL, in a block that looks new: __thread
// variables at their initial image (.tdata) or zero (.tbss), errno 0, its
// thread_local object not yet constructed, its pthread_key value null; then
// each thread scribbles over all of them, so a block reused without being
// made new again shows at once in the next thread. Thousands of sequential
// create+join rounds (one block going round), then batches of concurrent
// threads that yield (several blocks, on either worker). With
// TLS_REUSE_DLOPEN, a module with __thread variables is dlopen'ed after the
// cache is full: blocks cached before it must get the module's TLS (a DTV
// grown to its generation), and no thread may see the last one's dynamic
// TLS (its counter starts at 0 in each thread).
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#ifdef TLS_REUSE_DLOPEN
#include <dlfcn.h>
#endif

namespace {

__thread int seven = 7;
__thread char zeroed[64];
__thread void* null_pointer;

std::atomic<int> constructed{0}, destroyed{0}, key_destructors{0}, bad{0};
std::atomic<int> bad_errno{0}, bad_data{0}, bad_bss{0}, bad_object{0}, bad_key{0}, bad_module{0};

struct counted {
  int value = 42;
  counted() { constructed.fetch_add(1); }
  ~counted() {
    if (value != -1) bad.fetch_add(1);  // not the value this thread left
    value = 0x5eed;
    destroyed.fetch_add(1);
  }
};
thread_local counted object;
thread_local bool object_used;  // .tbss: false in every new thread

pthread_key_t key;
void key_destructor(void*) { key_destructors.fetch_add(1); }

#ifdef TLS_REUSE_DLOPEN
long (*bump)(long);
int (*initial)(void);
#endif

void* run(void* arg) {
  const bool yields = arg != nullptr;
  // errno first: nothing of this thread's own may have set it yet.
  if (errno != 0) bad_errno.fetch_add(1);
  if (seven != 7) bad_data.fetch_add(1);
  for (char c : zeroed) {
    if (c != 0) {
      bad_bss.fetch_add(1);
      break;
    }
  }
  if (null_pointer != nullptr || object_used) bad_bss.fetch_add(1);
  if (pthread_getspecific(key) != nullptr) bad_key.fetch_add(1);
  if (object.value != 42) bad_object.fetch_add(1);  // constructs it in this thread
#ifdef TLS_REUSE_DLOPEN
  if (bump && (initial() != 7 || bump(1) != 1)) bad_module.fetch_add(1);
#endif
  if (yields) sched_yield();
  // Scribble over all of it for the next thread that gets this block.
  seven = -1;
  std::memset(zeroed, 0xab, sizeof zeroed);
  null_pointer = &seven;
  object_used = true;
  object.value = -1;
  errno = EIO;
  pthread_setspecific(key, &seven);
#ifdef TLS_REUSE_DLOPEN
  if (bump) bump(1000);
#endif
  if (yields) sched_yield();
  return nullptr;
}

void rounds(int sequential, int batches) {
  for (int i = 0; i < sequential; ++i) {
    pthread_t t;
    pthread_create(&t, nullptr, run, nullptr);
    pthread_join(t, nullptr);
  }
  for (int b = 0; b < batches; ++b) {
    pthread_t t[8];
    for (auto& x : t) pthread_create(&x, nullptr, run, &key);  // non-null: yield
    for (auto& x : t) pthread_join(x, nullptr);
  }
}

}  // namespace

int main() {
  pthread_key_create(&key, key_destructor);
  rounds(3000, 50);
#ifdef TLS_REUSE_DLOPEN
  void* h = dlopen(DLOPEN_LIB, RTLD_NOW);
  if (!h) {
    std::printf("dlopen: %s\n", dlerror());
    return 1;
  }
  initial = reinterpret_cast<int (*)(void)>(dlsym(h, "tls_dlopen_initial"));
  bump = reinterpret_cast<long (*)(long)>(dlsym(h, "tls_dlopen_bump"));
  rounds(3000, 50);
#endif
  const int threads = constructed.load();
  std::printf("threads %d, thread_local objects destroyed %d, key destructors %d\n", threads,
              destroyed.load(), key_destructors.load());
  std::printf("stale: errno %d, .tdata %d, .tbss %d, thread_local %d, key %d, module %d, "
              "destructor saw another's %d\n",
              bad_errno.load(), bad_data.load(), bad_bss.load(), bad_object.load(), bad_key.load(),
              bad_module.load(), bad.load());
  return 0;
}
