// SPDX-License-Identifier: Apache-2.0
// Launching the distributed benchmark programs (mpi_launch.hpp).
#include "mpi_launch.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "harness.hpp"

namespace bench {

std::vector<node_mode> parse_node_modes(const std::string& v) {
  const node_mode host{"host", "node"}, rank{"rank", "rank-nodes"}, pair{"pair", "pair-nodes"};
  if (v == "both") return {host, rank};
  if (v == "all") return {host, rank, pair};
  if (v == "host") return {host};
  if (v == "rank") return {rank};
  if (v == "pair") return {pair};
  throw usage_error("--node must be host, rank, pair, both (host and rank) or all, not '" + v + "'");
}

std::string beside_this_executable(const std::string& name) {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return name;
  path[n] = '\0';
  const std::string dir(path);
  return dir.substr(0, dir.rfind('/') + 1) + name;
}

void run_lines(const std::string& command, const std::function<bool(const char*)>& on_line) {
  FILE* in = popen((command + " 2>&1").c_str(), "r");
  if (!in) throw std::runtime_error("cannot run " + command + ": " + std::strerror(errno));
  std::string unexpected;
  char line[1024];
  while (std::fgets(line, sizeof line, in))
    if (!on_line(line) && unexpected.size() < 4000) unexpected += line;
  const int status = pclose(in);
  if (status != 0)
    throw std::runtime_error(command + " failed (status " + std::to_string(status) + "):\n" +
                             unexpected);
}

std::string mpiexec_command(const node_mode& mode, const std::string& env, unsigned ranks,
                            const std::string& program, const std::string& flags) {
#if defined(ITO_BENCH_MPIEXEC)
  const std::string target = beside_this_executable(program);
  if (access(target.c_str(), X_OK) != 0) throw std::runtime_error(target + " is missing");
  return "ITO_DIST_NODE=" + mode.env + " " + env + ITO_BENCH_MPIEXEC + " -n " +
         std::to_string(ranks) + " " + target + " " + flags;
#else
  (void)mode, (void)env, (void)ranks, (void)flags;
  throw std::runtime_error(program +
                           ": this ito was built without the distributed mode (no MPI found)");
#endif
}

}  // namespace bench
