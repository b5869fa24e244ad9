// SPDX-License-Identifier: Apache-2.0
// The trace as Chrome trace-event JSON (ui.perfetto.dev and chrome://tracing
// open it): one track per OS thread, named as the thread is; a ULT's run is a
// slice from the switch to it to the next switch on that thread; a message
// between ranks is a slice at each end joined by a flow arrow.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iterator>

#include "trace/trace_buffer.hpp"

namespace ito::trace {
namespace {

std::atomic<const char* const*> g_message_names{nullptr};
std::atomic<unsigned> g_message_types{0};

const char* message_name(unsigned type) {
  const char* const* names = g_message_names.load(std::memory_order_acquire);
  return names && type < g_message_types.load(std::memory_order_relaxed) ? names[type] : "message";
}

struct json_out {
  std::FILE* f;
  int pid;
  bool first = true;

  void begin_event() {
    std::fputs(first ? "\n" : ",\n", f);
    first = false;
  }
  void thread_name(long tid, const char* raw) {
    char name[16];  // a thread's name is at most 15 bytes; JSON needs no escapes in it
    std::size_t i = 0;
    for (; raw[i] && i < sizeof name - 1; ++i)
      name[i] = raw[i] == '"' || raw[i] == '\\' || static_cast<unsigned char>(raw[i]) < 0x20 ? '_' : raw[i];
    name[i] = '\0';
    begin_event();
    std::fprintf(f, R"({"ph":"M","pid":%d,"tid":%ld,"name":"thread_name","args":{"name":"%s"}})",
                 pid, tid, name);
  }
  void slice(long tid, const char* name, std::uint64_t id, double ts, double end, const char* cat) {
    begin_event();
    if (id == ~std::uint64_t{0})
      std::fprintf(f, R"({"ph":"X","pid":%d,"tid":%ld,"cat":"%s","name":"%s","ts":%.3f,"dur":%.3f})",
                   pid, tid, cat, name, ts, end - ts);
    else
      std::fprintf(f,
                   R"({"ph":"X","pid":%d,"tid":%ld,"cat":"%s","name":"%s %llu","ts":%.3f,"dur":%.3f,"args":{"id":%llu}})",
                   pid, tid, cat, name, static_cast<unsigned long long>(id), ts, end - ts,
                   static_cast<unsigned long long>(id));
  }
  // One end of a message: a slice (of no length) on this thread, and the
  // arrow's start or end, keyed by both ranks and the message's number.
  void message(long tid, std::uint64_t arg, bool sent, double ts) {
    const unsigned from = static_cast<unsigned>(arg >> 48), to = static_cast<unsigned>(arg >> 32) & 0xffffu;
    const unsigned type = static_cast<unsigned>(arg >> 24) & 0xffu;
    const unsigned long long number = arg & 0xffffffu;
    begin_event();
    std::fprintf(f,
                 R"({"ph":"X","pid":%d,"tid":%ld,"cat":"message","name":"%s %s %s rank %u","ts":%.3f,"dur":0,"args":{"from_rank":%u,"to_rank":%u,"number":%llu}})",
                 pid, tid, sent ? "send" : "receive", message_name(type), sent ? "to" : "from",
                 sent ? to : from, ts, from, to, number);
    begin_event();
    std::fprintf(f,
                 R"({"ph":"%s",%s"pid":%d,"tid":%ld,"cat":"message","name":"message","id":"%u.%u.%llu","ts":%.3f})",
                 sent ? "s" : "f", sent ? "" : R"("bp":"e",)", pid, tid, from, to, number, ts);
  }
  void steal(long tid, std::uint64_t victim, double ts) {
    begin_event();
    std::fprintf(f,
                 R"({"ph":"i","s":"t","pid":%d,"tid":%ld,"cat":"sched","name":"steal","ts":%.3f,"args":{"from_worker":%llu}})",
                 pid, tid, ts, static_cast<unsigned long long>(victim));
  }
};

constexpr std::uint64_t no_id = ~std::uint64_t{0};

// An open slice: its start and what it is; start < 0 when none is open.
struct open_slice {
  double start = -1;
  std::uint64_t id = no_id;
};

void close(json_out& out, long tid, open_slice& s, const char* name, const char* cat, double at) {
  if (s.start >= 0) out.slice(tid, name, s.id, s.start, at, cat);
  s = {};
}

// Slices that one kind of event opens and another closes.
struct span_kind {
  kind begin, end;
  const char* name;
  const char* cat;
};
constexpr span_kind spans[] = {
    {kind::job_begin, kind::job_end, "pool job", "pool"},
    {kind::node_begin, kind::node_end, "flow node", "flow"},
    {kind::poll_begin, kind::poll_end, "poll", "progress"},
};

void write_thread(json_out& out, const thread_buffer& b, std::size_t n, const clock_span& clocks) {
  out.thread_name(b.tid, b.name[0] ? b.name : "thread");
  open_slice ult, park, open_spans[std::size(spans)];
  const double end = clocks.micros(clocks.end.tsc);
  for (std::size_t i = 0; i < n; ++i) {
    const event& e = b.events[i];
    const double at = clocks.micros(e.tsc);
    switch (e.what) {
      case kind::run:
        close(out, b.tid, ult, "ULT", "ult", at);
        ult = {at, e.arg};
        break;
      case kind::scheduler:
        close(out, b.tid, ult, "ULT", "ult", at);
        break;
      case kind::park:
        close(out, b.tid, ult, "ULT", "ult", at);
        park = {at, no_id};
        break;
      case kind::unpark:
        close(out, b.tid, park, "park", "sched", at);
        break;
      case kind::steal:
        out.steal(b.tid, e.arg, at);
        break;
      case kind::message_sent:
      case kind::message_received:
        out.message(b.tid, e.arg, e.what == kind::message_sent, at);
        break;
      default:
        for (std::size_t k = 0; k < std::size(spans); ++k) {
          if (e.what == spans[k].begin) open_spans[k] = {at, no_id};
          if (e.what == spans[k].end) close(out, b.tid, open_spans[k], spans[k].name, spans[k].cat, at);
        }
        break;
    }
  }
  close(out, b.tid, ult, "ULT", "ult", end);
  close(out, b.tid, park, "park", "sched", end);
  for (std::size_t k = 0; k < std::size(spans); ++k)
    close(out, b.tid, open_spans[k], spans[k].name, spans[k].cat, end);
}

}  // namespace

void set_message_names(const char* const* names, unsigned count) noexcept {
  g_message_types.store(count, std::memory_order_relaxed);
  g_message_names.store(names, std::memory_order_release);
}

void write_trace(const char* path, const thread_buffer* buffers, unsigned trace,
                 const clock_span& clocks) noexcept {
  std::FILE* f = std::fopen(path, "w");
  if (!f) {
    std::fprintf(stderr, "ito: ITO_TRACE=%s: cannot write the trace\n", path);
    return;
  }
  json_out out{f, static_cast<int>(getpid())};
  std::fputs(R"({"displayTimeUnit":"ns","traceEvents":[)", f);
  std::uint64_t dropped = 0;
  for (const thread_buffer* b = buffers; b; b = b->next) {
    if (b->trace.load(std::memory_order_acquire) != trace) continue;  // no event this time
    const std::size_t n = b->count.load(std::memory_order_acquire);
    write_thread(out, *b, n, clocks);
    dropped += b->dropped.load(std::memory_order_relaxed);
  }
  std::fputs("\n]}\n", f);
  const bool ok = std::fflush(f) == 0;
  std::fclose(f);
  if (!ok) std::fprintf(stderr, "ito: ITO_TRACE=%s: writing the trace failed\n", path);
  if (dropped)
    std::fprintf(stderr,
                 "ito: trace: %llu events were not recorded (a thread records at most %zu per "
                 "runtime); the trace ends early on those threads\n",
                 static_cast<unsigned long long>(dropped), thread_buffer::capacity);
}

}  // namespace ito::trace
