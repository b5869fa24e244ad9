// SPDX-License-Identifier: Apache-2.0
// The flow layer's state per runtime, created on first use, and the hook
// through which workers run nodes between ULTs (the scheduler's tasks
// extension, sched/extension.hpp).
//
// The state is made lazily by the first flow call in a runtime (a runtime
// that never uses flow pays nothing) and published to every worker's
// `task_state`. A runtime whose workers have none yet is a new one; the previous
// runtime's state (its workers all joined by then) is freed at that moment.
#include <atomic>
#include <cerrno>
#include <mutex>

#include "flow/state.hpp"
#include "sched/extension.hpp"
#include "sched/idle.hpp"
#include "sched/scheduler.hpp"

namespace ito::flow::detail {
namespace {

std::mutex g_create_mutex;
flow_runtime* g_last = nullptr;  // guarded by g_create_mutex

// At most this many nodes per call, so that the scheduler loop still fires
// timers and picks up ULTs made runnable by other threads.
constexpr unsigned batch_limit = 256;

std::atomic_ref<void*> extension_of(sched::worker* w) noexcept {
  return std::atomic_ref<void*>(w->task_state);
}

flow_runtime* create_for(sched::runtime_state* rt) {
  sched::worker* w0 = rt->workers[0].get();
  std::lock_guard lock(g_create_mutex);
  if (flow_worker* fw = worker_state(w0)) return fw->frt;
  delete g_last;  // a runtime that has ended: its workers are gone
  g_last = new flow_runtime(rt);
  for (auto& fw : g_last->workers) extension_of(fw->worker).store(fw.get(), std::memory_order_release);
  return g_last;
}

// The tasks extension's run_some: runs nodes until none is runnable here, a ULT
// becomes runnable on this worker, or the batch ends.
bool run_some(sched::worker* w) {
  flow_worker* fw = worker_state(w);
  if (!fw) return false;  // no flow call in this runtime yet
  fw->in_run_some = true;
  unsigned ran = 0;
  while (ran < batch_limit) {
    node_core* n = next_node(fw);
    if (!n) break;
    run_node(fw, *n);
    ++ran;
    // A node that woke or spawned a ULT: let the scheduler run it now.
    if (!w->deque.looks_empty() || !w->bound_ready_looks_empty()) break;
  }
  hand_back_next_local(fw);
  flush_credits(fw);
  fw->in_run_some = false;
  return ran != 0;
}

// The tasks extension's has_work, before a worker parks.
bool has_work(sched::runtime_state* rt) {
  flow_worker* fw = worker_state(rt->workers[0].get());
  return fw && any_runnable(fw->frt);
}

struct flow_tasks final : sched::extension {
  bool run_some(sched::worker* w) override { return detail::run_some(w); }
  bool has_work(sched::runtime_state* rt) override { return detail::has_work(rt); }
};

// Set at static initialisation, before any runtime starts: this file is
// linked in exactly when a program uses flow.
const struct installer {
  installer() noexcept {
    static flow_tasks tasks;
    sched::install_extension(sched::extension_slot::tasks, &tasks);
  }
} install_tasks;

}  // namespace

flow_runtime::flow_runtime(sched::runtime_state* r) : rt(r) {
  for (auto& w : rt->workers) {
    workers.push_back(std::make_unique<flow_worker>(this, w.get()));
    workers.back()->rng = 0x2545F4914F6CDD1Dull * (w->index + 7);
  }
}

flow_runtime::~flow_runtime() {
  for (void* slab : slabs) ::operator delete[](slab, std::align_val_t{alignof(node_core)});
}

flow_worker* worker_state(sched::worker* w) noexcept {
  return static_cast<flow_worker*>(extension_of(w).load(std::memory_order_acquire));
}

place here() {
  if (sched::worker* w = sched::current_worker()) {
    flow_worker* fw = worker_state(w);
    if (!fw) fw = create_for(w->rt)->workers[w->index].get();
    return {fw, fw->frt};
  }
  sched::runtime_state* rt = sched::g_runtime.load(std::memory_order_acquire);
  if (!rt) throw flow_error(EPERM, "ito::flow: no ito runtime is running");
  flow_worker* fw0 = worker_state(rt->workers[0].get());
  return {nullptr, fw0 ? fw0->frt : create_for(rt)};
}

}  // namespace ito::flow::detail
