// SPDX-License-Identifier: Apache-2.0
// Threads that wait on futexes of their own through syscall(SYS_futex), as
// Rust's std does for its Mutex, Condvar and thread parking: a lock in
// Rust's shape (0 free, 1 locked, 2 contended), a flag a thread waits for
// while the thread that sets it has yet to run, timed waits, a word that
// changed before the wait, and a wait on a futex that is not private. The
// output must be NPTL's; under the preload at one worker, a kernel wait
// would hold the only worker and the waker would never run.
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long futex(_Atomic uint32_t* word, int op, uint32_t val, const struct timespec* t,
                  uint32_t val3) {
  return syscall(SYS_futex, word, op, val, t, NULL, val3);
}

// FUTEX_WAIT_BITSET with an absolute monotonic deadline (null: none), as Rust's futex_wait.
static long wait_until(_Atomic uint32_t* word, uint32_t expected, const struct timespec* abs) {
  return futex(word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected, abs, FUTEX_BITSET_MATCH_ANY);
}
static long wake(_Atomic uint32_t* word, int n) {
  return futex(word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, (uint32_t)n, NULL, 0);
}

// --- a lock in the shape of Rust's futex Mutex ---
static _Atomic uint32_t lock_word;
static long counter;

static void lock(void) {
  uint32_t free_ = 0;
  if (atomic_compare_exchange_strong(&lock_word, &free_, 1)) return;
  while (atomic_exchange(&lock_word, 2) != 0) wait_until(&lock_word, 2, NULL);
}
static void unlock(void) {
  if (atomic_exchange(&lock_word, 0) == 2) wake(&lock_word, 1);
}

static void* counting(void* arg) {
  (void)arg;
  for (int i = 0; i < 20000; ++i) {
    lock();
    long c = counter;
    if (i % 1000 == 0) sched_yield();  // holding it: the others must wait
    counter = c + 1;
    unlock();
  }
  return NULL;
}

// --- a flag waited for before its setter runs ---
static _Atomic uint32_t flag;
static _Atomic uint32_t parked_result = 99;

static void* waits_for_flag(void* arg) {
  (void)arg;
  while (atomic_load(&flag) == 0) wait_until(&flag, 0, NULL);
  atomic_store(&parked_result, atomic_load(&flag));
  return NULL;
}

// --- several waiters, all woken ---
static _Atomic uint32_t gate;
static _Atomic int through;
static void* waits_at_gate(void* arg) {
  (void)arg;
  while (atomic_load(&gate) == 0) wait_until(&gate, 0, NULL);
  atomic_fetch_add(&through, 1);
  return NULL;
}

// --- a futex that is not private ---
static _Atomic uint32_t shared_word;
static void* waits_shared(void* arg) {
  (void)arg;
  while (atomic_load(&shared_word) == 0) futex(&shared_word, FUTEX_WAIT, 0, NULL, 0);
  return NULL;
}

static struct timespec after_ms(int ms) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_nsec += (long)ms * 1000000;
  t.tv_sec += t.tv_nsec / 1000000000;
  t.tv_nsec %= 1000000000;
  return t;
}

static long ms_since(const struct timespec* start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  pthread_t t[4];

  // The flag's waiter starts first and waits; this thread sets it later.
  pthread_create(&t[0], NULL, waits_for_flag, NULL);
  usleep(20000);
  atomic_store(&flag, 7);
  wake(&flag, 1);
  pthread_join(t[0], NULL);
  printf("flag: waiter saw %u\n", (unsigned)atomic_load(&parked_result));

  for (int i = 0; i < 4; ++i) pthread_create(&t[i], NULL, counting, NULL);
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
  printf("lock: counter %ld (expected 80000)\n", counter);

  // Timed waits that nobody wakes.
  _Atomic uint32_t quiet = 5;
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  struct timespec deadline = after_ms(30);
  long r = wait_until(&quiet, 5, &deadline);
  int e = errno;
  printf("absolute deadline: %ld %s, waited enough: %s\n", r, e == ETIMEDOUT ? "ETIMEDOUT" : "?",
         ms_since(&start) >= 29 ? "yes" : "no");
  clock_gettime(CLOCK_MONOTONIC, &start);
  struct timespec relative = {0, 30 * 1000000};
  r = futex(&quiet, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 5, &relative, 0);
  e = errno;
  printf("relative timeout: %ld %s, waited enough: %s\n", r, e == ETIMEDOUT ? "ETIMEDOUT" : "?",
         ms_since(&start) >= 29 ? "yes" : "no");
  // The word already differs: at once.
  r = wait_until(&quiet, 6, NULL);
  e = errno;
  printf("changed word: %ld %s\n", r, e == EAGAIN ? "EAGAIN" : "?");
  struct timespec bad = {0, 2000000000L};
  r = futex(&quiet, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 5, &bad, 0);
  e = errno;
  printf("bad timeout: %ld %s\n", r, e == EINVAL ? "EINVAL" : "?");
  printf("wake with no waiter: %ld\n", wake(&quiet, 1));

  // Three waiters, one wake of all.
  for (int i = 0; i < 3; ++i) pthread_create(&t[i], NULL, waits_at_gate, NULL);
  usleep(20000);
  atomic_store(&gate, 1);
  long woken = wake(&gate, INT_MAX);
  for (int i = 0; i < 3; ++i) pthread_join(t[i], NULL);
  printf("gate: %d through, woken by the wake at most 3: %s\n", atomic_load(&through),
         woken >= 0 && woken <= 3 ? "yes" : "no");

  // Not private: its waker could be another process.
  pthread_create(&t[0], NULL, waits_shared, NULL);
  usleep(20000);
  atomic_store(&shared_word, 1);
  futex(&shared_word, FUTEX_WAKE, 1, NULL, 0);
  pthread_join(t[0], NULL);
  printf("shared futex: waiter woken\n");
  return 0;
}
