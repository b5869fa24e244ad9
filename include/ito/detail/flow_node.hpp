// SPDX-License-Identifier: Apache-2.0
// Internal to ito (namespace ito::flow::detail; not for users to name): a flow
// node's core and the non-template halves of graph's templates. Included by
// ito/flow.hpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace ito::flow {

class graph;
class node;
class context;
enum class priority : std::uint8_t;
struct node_options;

namespace detail {

struct graph_state;
struct node_extra;
struct flow_worker;

// The body's entry: runs it (ctx != null) or destroys it (ctx == null).
using body_fn = void (*)(void* storage, context* ctx);

inline constexpr std::size_t inline_body_bytes = 48;

inline constexpr std::uint16_t flag_exclusive = 1;
inline constexpr std::uint16_t flag_dynamic = 2;  // made by a running node: used once, then recycled
inline constexpr std::uint16_t flag_high = 4;

// One node in two cache lines: the first holds what continuing and running
// touch, the second the body. Static nodes live in their graph's chunks,
// dynamic ones in per-worker pools: continuing and running never allocate.
struct alignas(64) node_core {
  std::atomic<std::int32_t> counter{0};
  std::int32_t reset = 0;
  std::uint32_t successor_count = 0;
  std::atomic<std::uint16_t> flags{0};
  std::uint8_t ports = 0;  // exclusive nodes: input ports (= reset value)
  std::uint8_t spare = 0;
  const std::uintptr_t* successors = nullptr;  // node address | port, built by graph::seal
  body_fn body = nullptr;
  graph_state* owner = nullptr;
  std::uint64_t value = 0;  // the value of the continuation that released it
  std::atomic<node_extra*> extra{nullptr};  // exclusive queues, completion waiters
  body_fn destroy = nullptr;                // null: trivially destructible inline body
  // --- second line
  node_core* link = nullptr;  // injector stacks, free lists
  std::uint32_t index = 0;    // in its graph (static nodes)
  alignas(16) unsigned char storage[inline_body_bytes];
};
static_assert(sizeof(node_core) == 128);

struct access;

template <class B>
void invoke_body(B& b, context& ctx) {
  if constexpr (std::is_invocable_v<B&, context&>) {
    b(ctx);
  } else {
    static_assert(std::is_invocable_v<B&>, "a node body is callable as body(context&) or body()");
    b();
  }
}

template <class B>
void run_inline(void* storage, context* ctx) {
  B* b = std::launder(reinterpret_cast<B*>(storage));
  if (ctx) invoke_body(*b, *ctx);
  else b->~B();
}

template <class B>
void run_heap(void* storage, context* ctx) {
  B* b = *std::launder(reinterpret_cast<B**>(storage));
  if (ctx) invoke_body(*b, *ctx);
  else delete b;
}

// Stores the body inline when it fits (most lambdas), else on the heap.
template <class F>
void install_body(node_core& c, F&& f) {
  using B = std::decay_t<F>;
  if constexpr (sizeof(B) <= inline_body_bytes && alignof(B) <= 16) {
    ::new (static_cast<void*>(c.storage)) B(std::forward<F>(f));
    c.body = &run_inline<B>;
    c.destroy = std::is_trivially_destructible_v<B> ? nullptr : &run_inline<B>;
  } else {
    B* b = new B(std::forward<F>(f));
    ::new (static_cast<void*>(c.storage)) B*(b);
    c.body = &run_heap<B>;
    c.destroy = &run_heap<B>;
  }
}

// Non-template halves of graph::add, graph::spawn, graph::make_node.
node_core& allocate_static(graph_state* g, const node_options& o);
node& commit_static(graph_state* g, node_core& c, std::string name, const node_options& o);
void abandon_static(graph_state* g, node_core& c) noexcept;
node_core& allocate_dynamic(graph_state* g, int counter);
node& commit_dynamic(node_core& c, int counter, priority p);
void abandon_dynamic(node_core& c) noexcept;

void continue_node(node& n, std::uint64_t value, unsigned port);

}  // namespace detail

}  // namespace ito::flow
