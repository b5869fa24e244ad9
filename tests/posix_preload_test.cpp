// SPDX-License-Identifier: Apache-2.0
// libito-preload.so as a whole: every glibc entry point that touches a
// mutex, condition variable, rwlock, barrier, spinlock, semaphore or thread
// handle is interposed (or listed below as safe on ito's objects), a bad
// ITO_* variable stops the program at start, and CPython's threads (POSIX
// semaphores for locks) run under it.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <set>
#include <string>

namespace {

#ifndef ITO_PRELOAD_LIB
#define ITO_PRELOAD_LIB ""
#endif
const std::string preload_lib = ITO_PRELOAD_LIB;
#ifndef ITO_TLS_PROGRAM
#define ITO_TLS_PROGRAM ""
#endif
const std::string tls_program = ITO_TLS_PROGRAM;
#ifndef ITO_TASK_COUNT_PROGRAM
#define ITO_TASK_COUNT_PROGRAM ""
#endif
const std::string task_count_program = ITO_TASK_COUNT_PROGRAM;
#ifndef ITO_DEADLOCK_PROGRAM
#define ITO_DEADLOCK_PROGRAM ""
#endif
const std::string deadlock_program = ITO_DEADLOCK_PROGRAM;
#ifndef ITO_NO_WAIT_PROGRAM
#define ITO_NO_WAIT_PROGRAM ""
#endif
const std::string no_wait_program = ITO_NO_WAIT_PROGRAM;

// The output and exit status of `sh -c command` (stderr folded into stdout).
struct result {
  std::string out;
  int status = -1;
};
result run(const std::string& command) {
  result r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  r.status = pclose(p);
  return r;
}

// The functions a shared object defines (nm -D --defined-only), versions cut.
std::set<std::string> defined_functions(const std::string& path) {
  std::set<std::string> names;
  result r = run("nm -D --defined-only '" + path + "'");
  std::size_t at = 0;
  while (at < r.out.size()) {
    std::size_t end = r.out.find('\n', at);
    if (end == std::string::npos) end = r.out.size();
    std::string line = r.out.substr(at, end - at);
    at = end + 1;
    std::size_t sp = line.rfind(' ');
    if (sp == std::string::npos || sp < 2) continue;
    const char type = line[sp - 1];
    if (type != 'T' && type != 'W' && type != 'i') continue;
    std::string name = line.substr(sp + 1);
    name = name.substr(0, name.find('@'));
    names.insert(name);
  }
  return names;
}

std::string libc_path() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&fopen), &info) || !info.dli_fname) return {};
  return info.dli_fname;
}

// Every glibc export of these families must be classified here: a name
// glibc adds later fails the test until someone decides.
bool in_scope(const std::string& n) {
  return n.rfind("pthread_", 0) == 0 || n.rfind("__pthread_", 0) == 0 ||
         n.rfind("_pthread_", 0) == 0 || n.rfind("sem_", 0) == 0;
}

// Safe on ito's objects without interposing, and why.
const std::set<std::string> allowed = {
    // Attribute objects keep glibc's own layout (ito reads only what it needs),
    // so glibc's setters and getters work on them.
    "pthread_attr_getaffinity_np", "pthread_attr_getguardsize", "pthread_attr_getinheritsched",
    "pthread_attr_getschedparam", "pthread_attr_getschedpolicy", "pthread_attr_getscope",
    "pthread_attr_getsigmask_np", "pthread_attr_getstack", "pthread_attr_getstackaddr",
    "pthread_attr_setaffinity_np", "pthread_attr_setguardsize", "pthread_attr_setinheritsched",
    "pthread_attr_setschedparam", "pthread_attr_setschedpolicy", "pthread_attr_setscope",
    "pthread_attr_setsigmask_np", "pthread_attr_setstack", "pthread_attr_setstackaddr",
    "pthread_getattr_default_np", "pthread_setattr_default_np",
    "pthread_barrierattr_destroy", "pthread_barrierattr_getpshared", "pthread_barrierattr_init",
    "pthread_barrierattr_setpshared", "pthread_condattr_getpshared",
    "pthread_condattr_setpshared", "pthread_mutexattr_getkind_np",
    "pthread_mutexattr_getprioceiling", "pthread_mutexattr_getprotocol",
    "pthread_mutexattr_getpshared", "pthread_mutexattr_getrobust",
    "pthread_mutexattr_getrobust_np", "pthread_mutexattr_setkind_np",
    "pthread_mutexattr_setprioceiling", "pthread_mutexattr_setprotocol",
    "pthread_mutexattr_setpshared", "pthread_mutexattr_setrobust",
    "pthread_mutexattr_setrobust_np", "pthread_rwlockattr_destroy",
    "pthread_rwlockattr_getkind_np", "pthread_rwlockattr_getpshared", "pthread_rwlockattr_init",
    "pthread_rwlockattr_setkind_np", "pthread_rwlockattr_setpshared",
    "__pthread_mutexattr_destroy", "__pthread_mutexattr_init", "__pthread_mutexattr_settype",
    // Process-wide or per-OS-thread state, no thread handle or ito object.
    "pthread_atfork", "pthread_getconcurrency", "pthread_setconcurrency",
    "pthread_kill_other_threads_np", "__pthread_get_minstack",
    // The inline helper of glibc's -fexceptions cleanup macros: it reads only
    // its own frame record.
    "__pthread_cleanup_routine",
    // Named semaphores are process-shared, glibc's; ito's sem_* calls
    // recognise them (no ito tag) and hand them to glibc.
    "sem_open", "sem_close", "sem_unlink",
};

TEST(PosixPreload, EveryGlibcThreadOrLockCallIsInterposedOrAllowed) {
  if (preload_lib.empty()) GTEST_SKIP() << "no libito-preload.so in sanitizer builds";
  const std::string libc = libc_path();
  ASSERT_FALSE(libc.empty());
  const std::set<std::string> glibc = defined_functions(libc);
  const std::set<std::string> ours = defined_functions(preload_lib);
  ASSERT_GT(glibc.count("pthread_mutex_lock"), 0u) << "nm -D failed on " << libc;
  ASSERT_GT(ours.count("pthread_mutex_lock"), 0u) << "nm -D failed on " << preload_lib;
  std::string missing;
  int checked = 0;
  for (const std::string& name : glibc) {
    if (!in_scope(name)) continue;
    ++checked;
    if (!ours.count(name) && !allowed.count(name)) missing += " " + name;
  }
  EXPECT_GT(checked, 150);
  EXPECT_EQ(missing, "") << "glibc calls that reach ito's objects but are neither interposed "
                            "nor allow-listed (with a reason) in this test";
  for (const std::string& name : allowed)
    EXPECT_FALSE(ours.count(name)) << name << " is interposed: drop it from the allow-list";
}

TEST(PosixPreload, BadEnvironmentStopsAtStartWithStatus2) {
  if (preload_lib.empty()) GTEST_SKIP() << "no libito-preload.so in sanitizer builds";
  for (const char* bad : {"ITO_WORKERS=abc", "ITO_STACK_SIZE=1", "ITO_WORKERS=0"}) {
    result r = run(std::string("env ") + bad + " LD_PRELOAD=" + preload_lib + " /bin/echo ran");
    ASSERT_TRUE(WIFEXITED(r.status)) << bad << ": " << r.out;
    EXPECT_EQ(WEXITSTATUS(r.status), 2) << bad << ": " << r.out;
    const std::string var = std::string(bad).substr(0, std::string(bad).find('=') + 1);
    EXPECT_NE(r.out.find("ito: " + var), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("ran"), std::string::npos) << "the program ran: " << r.out;
  }
}

// glibc's old internal names (__pthread_mutex_lock…) are the public ones
// under another name: a wrapper calling the public name from inside the
// library would be the library's own call, which goes to glibc.
TEST(PosixPreload, InternalNamesAreAliasesOfThePublicOnes) {
  if (preload_lib.empty()) GTEST_SKIP() << "no libito-preload.so in sanitizer builds";
  result r = run("nm -D --defined-only '" + preload_lib + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  auto address_of = [&](const std::string& name) {
    const std::string tail = " " + name + "\n";
    const std::size_t at = r.out.find(tail);
    if (at == std::string::npos) return std::string("missing ") + name;
    const std::size_t start = r.out.rfind('\n', at) + 1;
    return r.out.substr(start, r.out.find(' ', start) - start);
  };
  for (const char* name : {"pthread_mutex_init", "pthread_mutex_destroy", "pthread_mutex_lock",
                           "pthread_mutex_trylock", "pthread_mutex_unlock", "pthread_rwlock_init",
                           "pthread_rwlock_destroy", "pthread_rwlock_rdlock",
                           "pthread_rwlock_tryrdlock", "pthread_rwlock_wrlock",
                           "pthread_rwlock_trywrlock", "pthread_rwlock_unlock",
                           "pthread_key_create", "pthread_getspecific", "pthread_setspecific",
                           "pthread_once"}) {
    EXPECT_EQ(address_of(std::string("__") + name), address_of(name)) << name;
  }
}

// A program with __thread variables of its own runs on ULTs with a TLS block
// each (docs/POSIX.md, "TLS and errno"), where per-ULT TLS works (x86-64);
// elsewhere, or with ITO_ULT_TLS=0, it keeps OS threads (ULTs sharing their
// worker's TLS would share them) and says so once on stderr.
// ITO_PRELOAD_THREADS overrides the choice either way.
TEST(PosixPreload, ProgramWithThreadLocalsGetsTlsBlocksOrKeepsOsThreads) {
  if (preload_lib.empty()) GTEST_SKIP() << "no libito-preload.so in sanitizer builds";
  const std::string under = "timeout 60 env ITO_WORKERS=1 LD_PRELOAD=" + preload_lib + " ";
  const std::string all_kept = "4 threads, 4 kept their own value\n";
  const std::string note = "ito: preload: posix_tls_per_thread has thread-local variables; its "
                           "threads stay OS threads (";

  for (const char* setting : {"", "ITO_ULT_TLS=1 "}) {
    result blocks = run(under + setting + "ITO_STATS=1 '" + tls_program + "'");
    EXPECT_EQ(blocks.status, 0) << blocks.out;
    EXPECT_NE(blocks.out.find(all_kept), std::string::npos) << blocks.out;
#if defined(__x86_64__)
    EXPECT_EQ(blocks.out.find(note), std::string::npos) << blocks.out;
    EXPECT_NE(blocks.out.find("ito: stats:"), std::string::npos) << blocks.out;  // it ran on ULTs
    // ITO_STATS counts the blocks: the 4 threads live at once, none reused.
    EXPECT_NE(blocks.out.find("ito: TLS blocks: 4 made by ld.so, 0 reused from a worker's cache, "
                              "0 handed back"),
              std::string::npos)
        << blocks.out;
#else
    EXPECT_NE(blocks.out.find(note + "per-ULT TLS is done for x86-64 only"), std::string::npos)
        << blocks.out;
#endif
  }

  result no_blocks = run(under + "ITO_ULT_TLS=0 '" + tls_program + "'");
  EXPECT_EQ(no_blocks.status, 0) << no_blocks.out;
  EXPECT_NE(no_blocks.out.find(note + "ITO_ULT_TLS=0;"), std::string::npos) << no_blocks.out;
  EXPECT_NE(no_blocks.out.find(all_kept), std::string::npos) << no_blocks.out;

  result quiet = run(under + "ITO_PRELOAD_THREADS=os '" + tls_program + "'");
  EXPECT_EQ(quiet.status, 0);
  EXPECT_EQ(quiet.out, all_kept);

  // Forced onto ULTs of one worker without blocks, the threads share the
  // variable: only the last writer reads its own value back.
  result forced = run(under + "ITO_PRELOAD_THREADS=ult '" + tls_program + "'");
  EXPECT_EQ(forced.status, 0) << forced.out;
  EXPECT_EQ(forced.out, "4 threads, 1 kept their own value\n");

  result bad = run(under + "ITO_PRELOAD_THREADS=sometimes '" + tls_program + "'");
  ASSERT_TRUE(WIFEXITED(bad.status)) << bad.out;
  EXPECT_EQ(WEXITSTATUS(bad.status), 2) << bad.out;
  EXPECT_EQ(bad.out, "ito: ITO_PRELOAD_THREADS=sometimes is invalid: expected auto, ult or os\n");

  // The check covers the other variables too, on ULTs or OS threads.
  for (const char* setting : {"", "ITO_ULT_TLS=0 "}) {
    result bad_other = run(under + setting + "ITO_WORKERS=lots '" + tls_program + "'");
    EXPECT_EQ(WEXITSTATUS(bad_other.status), 2) << bad_other.out;
    EXPECT_NE(bad_other.out.find("ito: ITO_WORKERS=lots is invalid"), std::string::npos)
        << bad_other.out;
    EXPECT_EQ(bad_other.out.find("kept"), std::string::npos) << bad_other.out;
  }
}

// A plain pthread program whose threads all deadlock: run as ULTs, ito says
// so (ITO_DEADLOCK) and ends it with status 4; left OS threads, nothing can
// be proved and it hangs until `timeout` ends it.
TEST(PosixPreload, DeadlockedThreadsAreReportedOnlyAsUlts) {
  if (preload_lib.empty()) GTEST_SKIP() << "no libito-preload.so in sanitizer builds";
  const std::string under = "env ITO_WORKERS=2 LD_PRELOAD=" + preload_lib + " ";

  result ults = run("timeout 20 " + under + "ITO_PRELOAD_THREADS=ult '" + deadlock_program + "'");
  ASSERT_TRUE(WIFEXITED(ults.status)) << ults.out;
  EXPECT_EQ(WEXITSTATUS(ults.status), 4) << ults.out;
  EXPECT_NE(ults.out.find("taking the mutexes\n"), std::string::npos) << ults.out;
  EXPECT_NE(ults.out.find("ito: deadlock: every ULT is blocked"), std::string::npos) << ults.out;
  std::size_t mutex_lines = 0;
  for (std::size_t at = 0; (at = ults.out.find(": blocked in mutex on 0x", at)) != std::string::npos;
       ++at)
    ++mutex_lines;
  EXPECT_EQ(mutex_lines, 2u) << ults.out;
  EXPECT_NE(ults.out.find("ito:   main ULT: blocked in join of ULT "), std::string::npos)
      << ults.out;

  result os = run("timeout 3 " + under + "ITO_PRELOAD_THREADS=os '" + deadlock_program + "'");
  ASSERT_TRUE(WIFEXITED(os.status)) << os.out;
  EXPECT_EQ(WEXITSTATUS(os.status), 124) << os.out;  // timeout's: it hung
  EXPECT_EQ(os.out.find("deadlock"), std::string::npos) << os.out;
}

// A program whose only thread-local storage is libc's gets no note (and ULTs).
TEST(PosixPreload, ProgramWithoutThreadLocalsGetsNoNote) {
  if (preload_lib.empty()) GTEST_SKIP() << "no libito-preload.so in sanitizer builds";
  result r = run("env LD_PRELOAD=" + preload_lib + " /bin/echo ran");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "ran\n");
}

// The runtime's other workers' OS threads start only with the program's
// first thread: a process that makes
// none (most that run under the preload: shells, coreutils) pays for no
// thread creation at start nor for joining them at exit.
TEST(PosixPreload, WorkersStartWithTheFirstThread) {
  if (preload_lib.empty()) GTEST_SKIP() << "no libito-preload.so in sanitizer builds";
  result r = run("timeout 60 env ITO_WORKERS=3 LD_PRELOAD=" + preload_lib + " '" +
                 task_count_program + "'");
  EXPECT_EQ(r.status, 0) << r.out;
  // Before: the main thread alone. After: it, workers 1 and 2 and the
  // preemption watch, which starts with them (the thread made and joined was
  // a ULT).
  EXPECT_EQ(r.out, "before: 1\nafter: 4\n");
  // Without preemption, no watch.
  r = run("timeout 60 env ITO_WORKERS=3 ITO_PREEMPT=0 LD_PRELOAD=" + preload_lib + " '" +
          task_count_program + "'");
  EXPECT_EQ(r.out, "before: 1\nafter: 3\n");
}

// Until the program's first thread, the main thread's blocking calls are the
// plain calls: nothing else could run meanwhile. bash opens /dev/tty, reads a
// file, forks and waits for its child here; each call from the main ULT used
// to start a delegation pool thread (+2 ms to start a shell), and the runtime
// itself now starts only at the first call that needs one.
TEST(PosixPreload, ProgramWithoutThreadsGetsNoThreadOfItos) {
  if (preload_lib.empty()) GTEST_SKIP() << "no libito-preload.so in sanitizer builds";
  if (run("command -v bash").status != 0) GTEST_SKIP() << "no bash";
  const char* script =
      "read line < /proc/self/status; /bin/true; sleep 0.01; t=(/proc/$$/task/*); echo ${#t[@]}";
  result r = run("timeout 60 env LD_PRELOAD=" + preload_lib + " bash -c '" + script + "'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "1\n") << "threads in the shell's process";
}

// Locks, keys, once, semaphores and pthread_self that never wait need no
// runtime (the main thread is the same holder before and after it starts):
// the runtime starts with the first thread. ITO_STATS prints a table when a
// runtime ends, so its absence says none ran (issue 24, item 11: start-up).
TEST(PosixPreload, RuntimeStartsOnlyWhenNeeded) {
  if (preload_lib.empty()) GTEST_SKIP() << "no libito-preload.so in sanitizer builds";
  const std::string env = "timeout 60 env ITO_STATS=1 LD_PRELOAD=" + preload_lib + " '";
  result none = run(env + no_wait_program + "'");
  EXPECT_EQ(none.status, 0) << none.out;
  EXPECT_EQ(none.out, "done\n");
  result threaded = run(env + no_wait_program + "' thread");
  EXPECT_EQ(threaded.status, 0) << threaded.out;
  EXPECT_NE(threaded.out.find("ito: stats"), std::string::npos) << threaded.out;
  EXPECT_NE(threaded.out.find("done\n"), std::string::npos) << threaded.out;
  // CPython takes some 2,000 locks and 500 pthread_self while it starts.
  result where = run("python3 -c 'import sys; print(sys.executable)'");
  if (where.status != 0 || where.out.empty()) return;
  const std::string python = where.out.substr(0, where.out.find('\n'));
  result py = run(env + python + "' -c 'print(1)'");
  EXPECT_EQ(py.status, 0) << py.out;
  EXPECT_EQ(py.out, "1\n");
}

// CPython's Lock is a POSIX semaphore; its Condition is built on Locks.
const char* python_program = R"PY(
import threading
lock = threading.Lock()
cond = threading.Condition()
count = 0
turn = 0
def work(me):
    global count, turn
    for i in range(200):
        with lock:
            count += 1
        with cond:
            while turn % 4 != me:
                cond.wait()
            turn += 1
            cond.notify_all()
threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(count, turn)
)PY";

TEST(PosixPreload, PythonThreadsWithLocksAndConditions) {
  if (preload_lib.empty()) GTEST_SKIP() << "no libito-preload.so in sanitizer builds";
  // The interpreter itself: `python3` may be a shell-script shim (pyenv),
  // which would fork under the preload (unsupported).
  result where = run("python3 -c 'import sys; print(sys.executable)'");
  if (where.status != 0 || where.out.empty()) GTEST_SKIP() << "no python3";
  const std::string python = where.out.substr(0, where.out.find('\n'));
  for (const char* workers : {"1", "2"}) {
    result r = run(std::string("timeout 60 env ITO_WORKERS=") + workers + " LD_PRELOAD=" +
                   preload_lib + " '" + python + "' -c '" + python_program + "'");
    EXPECT_EQ(r.status, 0) << "ITO_WORKERS=" << workers << ": " << r.out;
    EXPECT_EQ(r.out, "800 800\n") << "ITO_WORKERS=" << workers;
  }
}

}  // namespace
