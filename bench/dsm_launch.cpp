// SPDX-License-Identifier: Apache-2.0
// `ito-bench dsm`: the DSM benchmark needs several MPI processes, so this
// subcommand launches them itself, once per memory mode (mpi_launch.hpp):
//   ITO_DIST_NODE=host|rank mpiexec -n RANKS <this directory>/ito-bench-dsm --rows ...
// and reports the rows it prints (run_report.hpp) as table or JSON lines:
// each mode's rows beside the other's, every ito row with its ratio to the
// raw MPI row of the same case and run. The numbers differ between the
// modes only where two ranks share a node (the one-page round trip).
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmarks.hpp"

namespace bench {

namespace {

// "row\t<case>\t<impl>\t<ops>\t<median>\t<min>\t<max>" (ns per op) into r.
bool parse_row(const char* line, result& r) {
  if (std::strncmp(line, "row\t", 4) != 0) return false;
  std::vector<std::string> cells;
  std::string cell;
  for (const char* c = line + 4; *c && *c != '\n'; ++c) {
    if (*c == '\t') {
      cells.push_back(cell);
      cell.clear();
    } else {
      cell += *c;
    }
  }
  cells.push_back(cell);
  if (cells.size() != 6) return false;
  r.group = cells[0];
  r.impl = cells[1];
  r.ops = std::stod(cells[2]);
  r.ns_per_op = std::stod(cells[3]);
  r.median_ms = r.ns_per_op * r.ops / 1e6;
  r.min_ms = std::stod(cells[4]) * r.ops / 1e6;
  r.max_ms = std::stod(cells[5]) * r.ops / 1e6;
  return true;
}

}  // namespace

void run_dsm(const dsm_params& p, reporter& out) {
  const std::string flags = "--rows --pages " + std::to_string(p.pages) + " --runs " +
                            std::to_string(p.runs);
  for (const node_mode& mode : p.modes) {
    progress("dsm, %u ranks, ITO_DIST_NODE=%s...", p.ranks, mode.env.c_str());
    std::vector<result> rows;
    run_lines(mpiexec_command(mode, "", p.ranks, "ito-bench-dsm", flags), [&](const char* line) {
      result r;
      if (!parse_row(line, r)) return false;
      r.bench = "dsm";
      r.workers = 1;
      r.peak_rss_kb = -1;  // the ranks' memory is not this process's
      r.params = {{"ranks", std::to_string(p.ranks)},
                  {"pages", std::to_string(p.pages)},
                  {"node", json_string(mode.env)}};
      rows.push_back(std::move(r));
      return true;
    });
    if (rows.empty()) throw std::runtime_error("ito-bench-dsm printed no rows");
    std::map<std::string, double> raw_mpi;  // per case, ns per op
    for (const result& r : rows)
      if (r.impl == "raw MPI") raw_mpi[r.group] = r.ns_per_op;
    for (result& r : rows) {
      if (r.impl == "ito dsm" && raw_mpi.count(r.group) && raw_mpi[r.group] > 0)
        r.extra.emplace_back("x_raw_mpi", r.ns_per_op / raw_mpi[r.group]);
      r.impl += ", " + mode.label;
      out.add(std::move(r));
    }
  }
}

}  // namespace bench
