// SPDX-License-Identifier: Apache-2.0
// The pool's engine. Threads sleep on a futex word of their own, pushed on a
// LIFO of idle threads (the most recently active thread is woken first: its
// stack and caches are warm). A job goes straight to a sleeping thread, else to
// a minimum thread still starting, else to a new thread, else into a FIFO queue
// that running threads drain before they sleep. One mutex guards the counters, the idle stack and the queue: it is
// held for a few instructions per hand-off, and a hand-off to a sleeping
// thread costs a futex wake anyway (this is the sleeping path of the pool).
//
// The engine is owned jointly by the os_pool object and its threads, and the
// last of them frees it. So destroying a pool waits only for the jobs (queued
// and running), never for idle threads to wake up and exit: a pool made for a
// few jobs costs no more wake-ups than starting a thread per job would.
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>
#include <utility>

#include "os/adaptive_spin.hpp"
#include "os/futex.hpp"
#include "io/os_thread.hpp"
#include "io/pool_retire_rule.hpp"
#include "ito/os_pool.hpp"
#include "sched/deadlock.hpp"
#include "trace/trace.hpp"

namespace ito::detail {

class pool_engine {
 public:
  explicit pool_engine(const os_pool_options& o)
      : opts(o), rule_(*o.min_threads, *o.max_threads, *o.bias) {}

  void start_minimum();
  void post(pool_job* job);
  os_pool_stats stats() const;
  // The os_pool lets go: stops the threads once every queued and running job
  // has finished, waits for those jobs, and frees the engine if no thread is
  // left (else the last thread does).
  void release_by_pool();

  const os_pool_options opts;

 private:
  // A sleeping thread's record, on that thread's own stack. wake: 0 waiting,
  // 1 handed a job (or told to stop), 2 asleep on the futex.
  struct sleeper {
    std::atomic<std::uint32_t> wake{0};
    pool_job* job = nullptr;  // set by the waker, under mutex_; null: stop
    sleeper* next = nullptr;
  };
  struct start_args {
    pool_engine* engine;
    pool_job* first;
  };

  void post_counted(pool_job* job);
  static void* thread_main(void* arg);
  void thread_loop(pool_job* job);
  // Starts a thread whose first job is `first` (may be null); the caller has
  // counted it in total_ already. Returns 0 or an errno value.
  int start_thread(pool_job* first);
  // Gives job to the most recent sleeper, if any (then unlocks; true).
  bool hand_to_sleeper(std::unique_lock<std::mutex>& lock, pool_job* job);
  // The sleeper waits for this, so it is still there to receive it; only one
  // already asleep on the futex needs the system call.
  static void wake(sleeper* s) noexcept {
    if (s->wake.exchange(1, std::memory_order_acq_rel) == 2) os::futex_wake_one(&s->wake);
  }
  void enqueue(pool_job* job) {  // with mutex_ held
    job->next = nullptr;
    if (tail_) tail_->next = job;
    else head_ = job;
    tail_ = job;
    ++queued_;
  }
  pool_job* dequeue() {  // with mutex_ held
    pool_job* j = head_;
    if (j) {
      head_ = j->next;
      if (!head_) tail_ = nullptr;
      --queued_;
    }
    return j;
  }

  mutable std::mutex mutex_;
  retire_rule rule_;
  sleeper* idle_ = nullptr;
  pool_job* head_ = nullptr;
  pool_job* tail_ = nullptr;
  unsigned total_ = 0, sleeping_ = 0, queued_ = 0;
  unsigned running_ = 0;  // threads holding a job (running it or about to)
  // Threads started without a job (the minimum) that have not yet looked at
  // the queue: a job queued for one of them is taken before it first sleeps,
  // so a job arriving meanwhile does not start another thread.
  unsigned starting_ = 0;
  std::uint64_t started_ = 0, retired_ = 0, jobs_run_ = 0;
  bool stopping_ = false;
  bool pool_alive_ = true;  // the os_pool still holds the engine
  completion* jobs_done_ = nullptr;  // the destructor's, while it waits for jobs
};

namespace {
// The engine whose thread this is, to catch a pool destroyed by its own job.
thread_local pool_engine* tls_own_engine = nullptr;
}  // namespace

void* pool_engine::thread_main(void* arg) {
  auto* a = static_cast<start_args*>(arg);
  pool_engine* e = a->engine;
  pool_job* first = a->first;
  delete a;
  // Named for top -H, gdb, perf and traces; numbered across every pool.
  static std::atomic<unsigned> started{0};
  char name[16];
  std::snprintf(name, sizeof name, "ito-pool-%u", started.fetch_add(1, std::memory_order_relaxed));
  pthread_setname_np(pthread_self(), name);
  sched::helper_thread_begins();  // a thread of ito's: the deadlock watch counts its jobs
  tls_own_engine = e;
  e->thread_loop(first);
  sched::helper_thread_ends();
  return nullptr;
}

void pool_engine::thread_loop(pool_job* job) {
  bool starting = job == nullptr;  // counted in starting_ until it takes the lock
  sleeper me;
  os::adaptive_spin linger;  // this thread's own record of how spinning pays
  std::unique_lock lock(mutex_, std::defer_lock);
  for (;;) {
    pool_job* finished = nullptr;
    if (job) {
      trace::record(trace::kind::job_begin);
      job->run(job);
      trace::record(trace::kind::job_end);
      finished = job;
    }
    // Report a job only once this thread can take another (see pool_job).
    auto report = [finished] {
      if (!finished) return;
      finished->finish(finished);  // the job may be gone after this
      sched::outside_work_ends();  // whatever it woke is runnable now
    };
    lock.lock();
    if (finished) {
      ++jobs_run_;
      --running_;
    }
    if (starting) {
      --starting_;
      starting = false;
    }
    if ((job = dequeue())) {
      ++running_;
      lock.unlock();
      report();
      continue;
    }
    if (stopping_) {
      completion* done = nullptr;
      if (running_ == 0) done = std::exchange(jobs_done_, nullptr);
      const bool last = --total_ == 0 && !pool_alive_;
      lock.unlock();
      report();
      if (done) done->signal();
      if (last) delete this;
      return;
    }
    // The transition to sleep, where the retire rule is applied (no timers). The pool
    // object holds the engine meanwhile, so a retiring thread is never last.
    if (rule_.should_retire(total_, sleeping_ + 1)) {
      --total_;
      ++retired_;
      lock.unlock();
      report();  // touches the job only: the engine may be gone already
      return;
    }
    me.wake.store(0, std::memory_order_relaxed);
    me.job = nullptr;
    me.next = idle_;
    idle_ = &me;
    ++sleeping_;
    lock.unlock();
    report();
    // A caller submitting again at once (a loop of submit + get) finds this
    // thread still awake: no futex wake, no sleeping CPU to rouse.
    if (!linger.wait([&] { return me.wake.load(std::memory_order_acquire) != 0; })) {
      std::uint32_t waiting = 0;
      if (me.wake.compare_exchange_strong(waiting, 2, std::memory_order_acq_rel))
        while (me.wake.load(std::memory_order_acquire) == 2) os::futex_wait(&me.wake, 2);
    }
    job = me.job;
  }
}

int pool_engine::start_thread(pool_job* first) {
  auto* a = new start_args{this, first};
  int err = start_helper_thread(&pool_engine::thread_main, a);
  if (err != 0) delete a;
  return err;
}

void pool_engine::start_minimum() {
  const unsigned n = *opts.min_threads;
  for (unsigned i = 0; i < n; ++i) {
    {
      std::lock_guard lock(mutex_);
      ++total_;
      ++started_;
      ++starting_;
    }
    if (int err = start_thread(nullptr); err != 0) {
      {
        std::lock_guard lock(mutex_);
        --total_;
        --started_;
        --starting_;
      }
      throw std::system_error(err, std::generic_category(),
                              "ito::os_pool: cannot start its minimum threads");
    }
  }
}

bool pool_engine::hand_to_sleeper(std::unique_lock<std::mutex>& lock, pool_job* job) {
  sleeper* s = idle_;
  if (!s) return false;
  idle_ = s->next;
  --sleeping_;
  ++running_;
  s->job = job;
  lock.unlock();
  wake(s);
  return true;
}

void pool_engine::post(pool_job* job) {
  // Counted until its completion is reported: a pool thread may wake a ULT
  // (or run any code) meanwhile, so the deadlock watch says nothing.
  sched::outside_work_begins();
  try {
    post_counted(job);
  } catch (...) {
    sched::outside_work_ends();
    throw;
  }
}

void pool_engine::post_counted(pool_job* job) {
  std::unique_lock lock(mutex_);
  if (hand_to_sleeper(lock, job)) return;
  if (queued_ < starting_) {  // a thread on its way to the idle list takes it
    enqueue(job);
    return;
  }
  if (total_ < *opts.max_threads) {
    ++total_;
    ++started_;
    ++running_;
    lock.unlock();
    const int err = start_thread(job);
    if (err == 0) return;
    // Out of threads (RLIMIT_NPROC, memory). The lock was let go meanwhile,
    // so a thread may have found the queue empty and gone to sleep: it takes
    // the job. Otherwise every thread left is running or starting, and looks
    // at the queue before it sleeps. With none at all, say so rather than
    // lose the job.
    lock.lock();
    --total_;
    --started_;
    --running_;
    if (hand_to_sleeper(lock, job)) return;
    if (total_ == 0)
      throw std::system_error(err, std::generic_category(),
                              "ito::os_pool: no thread exists and none can be started");
  }
  enqueue(job);
}

os_pool_stats pool_engine::stats() const {
  std::lock_guard lock(mutex_);
  os_pool_stats s;
  s.total = total_;
  s.sleeping = sleeping_;
  s.queued = queued_;
  s.started = started_;
  s.retired = retired_;
  s.jobs_run = jobs_run_;
  return s;
}

void pool_engine::release_by_pool() {
  if (tls_own_engine == this) {
    std::fputs("ito: an os_pool was destroyed by one of its own jobs (it would wait for itself)\n",
               stderr);
    std::abort();
  }
  completion jobs_done;
  bool wait = false;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    // Sleepers wake with no job and end; busy threads drain the queue first.
    while (sleeper* s = idle_) {
      idle_ = s->next;
      --sleeping_;
      s->job = nullptr;
      wake(s);
    }
    if (running_ > 0 || queued_ > 0) {
      jobs_done_ = &jobs_done;
      wait = true;
    }
  }
  if (wait) jobs_done.wait();
  bool last;
  {
    std::lock_guard lock(mutex_);
    pool_alive_ = false;
    last = total_ == 0;
  }
  if (last) delete this;
}

}  // namespace ito::detail

namespace ito {

os_pool::os_pool(const os_pool_options& requested)
    : engine_(new detail::pool_engine(resolve_pool_options(requested))) {
  try {
    engine_->start_minimum();
  } catch (...) {
    engine_->release_by_pool();
    throw;
  }
}

os_pool::~os_pool() { engine_->release_by_pool(); }

void os_pool::post(detail::pool_job* job) { engine_->post(job); }

os_pool_stats os_pool::stats() const { return engine_->stats(); }

const os_pool_options& os_pool::settings() const noexcept { return engine_->opts; }

}  // namespace ito
