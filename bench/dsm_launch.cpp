// SPDX-License-Identifier: Apache-2.0
// `ito-bench dsm`: the DSM benchmark needs several MPI processes, so this
// subcommand launches them itself: it replaces this process with
//   mpiexec -n RANKS <this directory>/ito-bench-dsm [--pages N] [--runs N]
// (the mpiexec found when ito was configured). Built without the distributed
// mode, it says so.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace bench {

namespace {

#if defined(ITO_BENCH_MPIEXEC)
// The directory this executable lives in (ito-bench-dsm is built beside it).
std::string own_directory() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return ".";
  path[n] = '\0';
  std::string dir(path);
  const auto slash = dir.rfind('/');
  return slash == std::string::npos ? "." : dir.substr(0, slash);
}

bool is_count(const char* s, long max) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  return errno == 0 && end != s && *end == '\0' && v > 0 && v <= max;
}
#endif

int dsm_usage(const char* error) {
  std::fprintf(stderr,
               "ito-bench dsm: %s\n"
               "usage: ito-bench dsm [--ranks N (2)] [--pages N (256)] [--runs N (7)]\n",
               error);
  return 2;
}

}  // namespace

int run_dsm(int argc, char** argv) {
#if defined(ITO_BENCH_MPIEXEC)
  std::string ranks = "2";
  std::vector<std::string> passed;  // flags for ito-bench-dsm
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") return dsm_usage("the DSM against raw MPI, at N ranks");
    if (i + 1 >= argc) return dsm_usage((flag + " needs a value").c_str());
    const char* value = argv[i + 1];
    if (flag == "--ranks") {
      if (!is_count(value, 1024) || std::strcmp(value, "1") == 0)
        return dsm_usage("--ranks must be 2 to 1024");
      ranks = value;
    } else if (flag == "--pages" || flag == "--runs") {
      if (!is_count(value, 1L << 20)) return dsm_usage((flag + " must be 1 to 1048576").c_str());
      passed.push_back(flag);
      passed.push_back(value);
    } else {
      return dsm_usage(("unknown flag " + flag).c_str());
    }
  }
  const std::string target = own_directory() + "/ito-bench-dsm";
  if (access(target.c_str(), X_OK) != 0) return dsm_usage((target + " is missing").c_str());
  std::vector<std::string> words = {ITO_BENCH_MPIEXEC, "-n", ranks, target};
  words.insert(words.end(), passed.begin(), passed.end());
  std::vector<char*> exec_argv;
  for (std::string& w : words) exec_argv.push_back(w.data());
  exec_argv.push_back(nullptr);
  std::fflush(stdout);
  execv(exec_argv[0], exec_argv.data());
  std::fprintf(stderr, "ito-bench dsm: cannot run %s: %s\n", exec_argv[0], std::strerror(errno));
  return 2;
#else
  (void)argc;
  (void)argv;
  return dsm_usage("this ito was built without the distributed mode (no MPI found; ITO_DIST=OFF)");
#endif
}

}  // namespace bench
