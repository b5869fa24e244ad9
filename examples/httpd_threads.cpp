// SPDX-License-Identifier: Apache-2.0
// httpd-threads: httpd's twin with one OS thread per connection and plain
// blocking system calls; the same connection loop (http_common.hpp).
//
//   httpd-threads [--port 8080] [--stack-kib 64]
#include <pthread.h>
#include <signal.h>

#include <cstdint>
#include <cstdio>

#include "http_common.hpp"

namespace {

const char* const usage =
    "usage: httpd-threads [--port P] [--stack-kib K] [--request-timeout-ms T]\n"
    "  HTTP/1.1 on 127.0.0.1:P (default 8080), one OS thread per connection with a\n"
    "  K KiB stack (default 64, as ito's ULT stacks); a request must arrive whole\n"
    "  within T ms of the last answer (default 10000)\n";

struct blocking_io {
  ssize_t recv(int fd, void* b, std::size_t n, int flags) { return ::recv(fd, b, n, flags); }
  ssize_t send(int fd, const void* b, std::size_t n) { return ::send(fd, b, n, MSG_NOSIGNAL); }
  bool wait_readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) > 0;
  }
  std::int64_t now_ms() { return http::monotonic_ms(); }
  void close(int fd) { ::close(fd); }
};

int g_request_timeout_ms = 0;

void* connection(void* arg) {
  blocking_io io;
  http::serve(io, static_cast<int>(reinterpret_cast<std::intptr_t>(arg)), g_request_timeout_ms);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const http::settings s = http::parse_args(argc, argv, usage);
  http::raise_descriptor_limit();
  signal(SIGPIPE, SIG_IGN);
  g_request_timeout_ms = s.request_timeout_ms;
  const int listen_fd = http::listen_on(s.port);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, s.stack_kib * 1024);
  std::printf("httpd-threads (one thread per connection, %zu KiB stacks): http://127.0.0.1:%d/\n",
              s.stack_kib, s.port);
  std::fflush(stdout);
  for (;;) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      std::perror("httpd-threads: accept");
      usleep(10'000);
      continue;
    }
    http::set_nodelay(fd);
    pthread_t th;
    if (int e = pthread_create(&th, &attr, connection, reinterpret_cast<void*>(std::intptr_t{fd}));
        e != 0) {
      std::fprintf(stderr, "httpd-threads: pthread_create: %s\n", std::strerror(e));
      ::close(fd);
    }
  }
}
