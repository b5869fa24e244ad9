// SPDX-License-Identifier: Apache-2.0
// graph::seal: successor lists, counters and ports from the static edges, and
// the rejection of cycles (a static graph must be a DAG), naming the cycle.
#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "flow/state.hpp"

namespace ito::flow::detail {
namespace {

// Successors of every node by index, back to back (CSR).
struct adjacency {
  std::vector<std::uint32_t> offset;  // count + 1
  std::vector<std::uint32_t> target;
  std::vector<std::uint8_t> port;
};

// One cycle among the nodes that Kahn's algorithm could not order, found by a
// depth-first search; rotated to start at its smallest index so that the
// message does not depend on where the search began.
std::vector<std::uint32_t> find_cycle(const adjacency& adj, std::uint32_t count) {
  std::vector<std::uint8_t> colour(count, 0);  // 0 new, 1 on the stack, 2 done
  std::vector<std::uint32_t> path, next_edge;
  for (std::uint32_t root = 0; root < count; ++root) {
    if (colour[root]) continue;
    path = {root};
    next_edge = {adj.offset[root]};
    colour[root] = 1;
    while (!path.empty()) {
      std::uint32_t v = path.back();
      if (next_edge.back() == adj.offset[v + 1]) {
        colour[v] = 2;
        path.pop_back();
        next_edge.pop_back();
        continue;
      }
      std::uint32_t t = adj.target[next_edge.back()++];
      if (colour[t] == 1) {
        std::vector<std::uint32_t> cycle(std::find(path.begin(), path.end(), t), path.end());
        std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
        return cycle;
      }
      if (colour[t] == 0) {
        colour[t] = 1;
        path.push_back(t);
        next_edge.push_back(adj.offset[t]);
      }
    }
  }
  return {};
}

void reject_cycles(const graph_state& g, const adjacency& adj, std::vector<std::uint32_t> indegree) {
  const std::uint32_t count = g.count;
  std::vector<std::uint32_t> ready;
  for (std::uint32_t i = 0; i < count; ++i)
    if (indegree[i] == 0) ready.push_back(i);
  std::uint32_t ordered = 0;
  while (!ready.empty()) {
    std::uint32_t v = ready.back();
    ready.pop_back();
    ++ordered;
    for (std::uint32_t e = adj.offset[v]; e < adj.offset[v + 1]; ++e)
      if (--indegree[adj.target[e]] == 0) ready.push_back(adj.target[e]);
  }
  if (ordered == count) return;
  std::vector<std::uint32_t> cycle = find_cycle(adj, count);
  if (cycle.empty()) throw flow_error(ELOOP, "ito::flow: the graph has a cycle");
  std::string text;
  for (std::uint32_t v : cycle) text += g.name_of(g.at(v)) + " -> ";
  text += g.name_of(g.at(cycle.front()));
  throw flow_error(ELOOP, "ito::flow: the graph has a cycle: " + text);
}

// An exclusive node's ports for a new port count (new edges into it), with
// the values its old ports still queue kept on the same ports, in order.
// Called on an idle graph: no activation owns the node (`pending` is 0 and
// whatever is queued was seen by the last owner), so the rings may be
// drained here.
std::unique_ptr<exclusive_state> regrown(std::unique_ptr<exclusive_state> old, unsigned ports,
                                         unsigned capacity) {
  auto now = std::make_unique<exclusive_state>(ports, capacity);
  if (old) {
    for (unsigned p = 0; p < std::min(ports, old->ports); ++p)
      while (old->rings[p].ready()) (void)now->rings[p].push(old->rings[p].pop());
  }
  return now;
}

}  // namespace

void graph_state::seal_locked() {
  if (sealed.load(std::memory_order_relaxed)) return;
  if (in_flight.outstanding() != 0)
    throw flow_error(EBUSY, "ito::flow: the graph changed while activations were in flight");

  std::vector<std::uint32_t> indegree(count, 0), outdegree(count, 0), ports(count, 0);
  for (const edge_record& e : edges) {
    ++outdegree[e.from];
    ++indegree[e.to];
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    if (!(at(i).flags.load(std::memory_order_relaxed) & flag_exclusive)) continue;
    const int asked = requests[i].counter;
    ports[i] = asked >= 0 ? std::max<std::uint32_t>(1, static_cast<std::uint32_t>(asked))
                          : std::max<std::uint32_t>(1, indegree[i]);
    if (ports[i] > max_ports)
      throw flow_error(EINVAL, "ito::flow: exclusive node '" + name_of(at(i)) + "' would have " +
                                   std::to_string(ports[i]) + " ports; at most " +
                                   std::to_string(max_ports));
  }

  adjacency adj;
  adj.offset.assign(count + 1, 0);
  for (std::uint32_t i = 0; i < count; ++i) adj.offset[i + 1] = adj.offset[i] + outdegree[i];
  adj.target.resize(edges.size());
  adj.port.resize(edges.size());
  std::vector<std::uint32_t> cursor(adj.offset.begin(), adj.offset.end() - 1);
  std::vector<std::uint32_t> next_port(count, 0);
  for (const edge_record& e : edges) {
    unsigned p = 0;
    if (ports[e.to] != 0) {
      p = e.port >= 0 ? static_cast<unsigned>(e.port) : next_port[e.to]++;
      if (p >= ports[e.to])
        throw flow_error(EINVAL, "ito::flow: edge " + name_of(at(e.from)) + " -> " +
                                     name_of(at(e.to)) + " uses port " + std::to_string(p) +
                                     ", but the node has " + std::to_string(ports[e.to]) +
                                     " port(s)");
    } else if (e.port > 0) {
      throw flow_error(EINVAL, "ito::flow: edge " + name_of(at(e.from)) + " -> " +
                                   name_of(at(e.to)) + " names a port, but the node is not exclusive");
    }
    const std::uint32_t slot = cursor[e.from]++;
    adj.target[slot] = e.to;
    adj.port[slot] = static_cast<std::uint8_t>(p);
  }
  reject_cycles(*this, adj, indegree);

  std::vector<std::uintptr_t> table(edges.size());
  for (std::size_t k = 0; k < table.size(); ++k)
    table[k] = reinterpret_cast<std::uintptr_t>(&at(adj.target[k])) | adj.port[k];
  std::vector<node_core*> starts;
  for (std::uint32_t i = 0; i < count; ++i) {
    node_core& c = at(i);
    c.successors = table.data() + adj.offset[i];
    c.successor_count = outdegree[i];
    if (ports[i] != 0) {
      node_extra* x = c.extra.load(std::memory_order_relaxed);
      if (!x->exclusive || x->exclusive->ports != ports[i])
        x->exclusive = regrown(std::move(x->exclusive), ports[i], requests[i].capacity);
      c.ports = static_cast<std::uint8_t>(ports[i]);
      c.reset = static_cast<std::int32_t>(ports[i]);
    } else {
      // Not re-armed: a node continued part way before this seal keeps what
      // it received (reset - counter); only the change of its reset value
      // (new edges into it) is added to what it still waits for. One
      // fetch_add, so a continuation racing with the seal is not lost either.
      const int asked = requests[i].counter;
      const std::int32_t reset = asked >= 0 ? asked : static_cast<std::int32_t>(indegree[i]);
      c.counter.fetch_add(reset - c.reset, std::memory_order_relaxed);
      c.reset = reset;
      if (c.reset == 0) starts.push_back(&c);
    }
  }
  successor_table = std::move(table);
  sources = std::move(starts);
  sealed.store(true, std::memory_order_release);
}

void graph_state::seal_if_needed() {
  std::lock_guard lock(build_mutex);
  seal_locked();
}

}  // namespace ito::flow::detail
