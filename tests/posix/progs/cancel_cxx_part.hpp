// SPDX-License-Identifier: Apache-2.0
// cancel.c's C++ cases: a cancelled thread's stack unwinds, so the
// destructors of its objects run (innermost first), as NPTL's forced
// unwinding runs them, and a catch (...) that rethrows lets it go on.
struct noted {
  const char* what;
  ~noted() { note(what); }
};

static void* cxx_destructors(void*) {
  noted outer{"outer "};
  try {
    noted inner{"inner "};
    sem_post(&ready);
    for (;;) sleep(3600);
  } catch (...) {
    note("rethrown ");
    throw;
  }
  return nullptr;
}

static void cxx_cases() { cancel_one("destructors", cxx_destructors); }
