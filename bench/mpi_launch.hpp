// SPDX-License-Identifier: Apache-2.0
// What the distributed subcommands (dsm, dist-fib, dist-sort, dist-stencil)
// share to launch their programs: the programs live beside ito-bench, run
// through the mpiexec found when ito was configured, once per memory mode
// (ITO_DIST_NODE=host: ranks of one host share one copy of the memory;
// =rank: one node per rank, every page through the DSM protocol), and print
// lines that the launcher parses.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace bench {

// One memory mode of the distributed runtime.
struct node_mode {
  std::string env;    // the value of ITO_DIST_NODE: "host" or "rank"
  std::string label;  // in the rows' names: "node" or "rank-nodes"
};

// --node host|rank|both (both: host first). usage_error for anything else.
std::vector<node_mode> parse_node_modes(const std::string& flag_value);

// The path of `name` in the directory of this executable.
std::string beside_this_executable(const std::string& name);

// Runs `command` through the shell (stderr joined to stdout) and hands each
// line to on_line; a line on_line does not take (returns false) is kept for
// the error. runtime_error when the command fails to start or exits non-zero.
void run_lines(const std::string& command, const std::function<bool(const char* line)>& on_line);

// `ITO_DIST_NODE=<mode> <env>mpiexec -n <ranks> <program> <flags>`, the
// program beside this executable (runtime_error if it is missing).
std::string mpiexec_command(const node_mode& mode, const std::string& env, unsigned ranks,
                            const std::string& program, const std::string& flags);

}  // namespace bench
