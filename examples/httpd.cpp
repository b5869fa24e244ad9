// SPDX-License-Identifier: Apache-2.0
// httpd: a small HTTP/1.1 server (keep-alive, static response) with one ULT per
// connection on ito::io. A connection's ULT parks whenever its socket would
// block; the poller wakes exactly that ULT when data arrives. Loopback only.
//
//   httpd [--port 8080] [--workers N]
//   wrk -c 100 -d 10s http://127.0.0.1:8080/
#include <signal.h>

#include <cstdio>

#include "http_common.hpp"
#include "ito/io.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"

namespace {

const char* const usage =
    "usage: httpd [--port P] [--workers N] [--request-timeout-ms T]\n"
    "  HTTP/1.1 on 127.0.0.1:P (default 8080), one ULT per connection, N workers\n"
    "  (default: ITO_WORKERS, else one per CPU); a request must arrive whole within\n"
    "  T ms of the last answer (default 10000)\n";

struct ito_io {
  ssize_t recv(int fd, void* b, std::size_t n, int flags) { return ito::io::recv(fd, b, n, flags); }
  ssize_t send(int fd, const void* b, std::size_t n) {
    return ito::io::send(fd, b, n, MSG_NOSIGNAL);
  }
  bool wait_readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return ito::io::poll(p, timeout_ms) > 0;
  }
  std::int64_t now_ms() { return http::monotonic_ms(); }
  void close(int fd) { ito::io::close(fd); }
};

int g_request_timeout_ms = 0;

void connection(int fd) {
  ito_io io;
  http::serve(io, fd, g_request_timeout_ms);
}

[[noreturn]] void accept_loop(int listen_fd) {
  for (;;) {
    const int fd = ito::io::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors, or an aborted connection: report, wait, go on.
      std::perror("httpd: accept");
      ito::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    http::set_nodelay(fd);
    // Child first: the connection's ULT runs at once (usually up to its first
    // wait), then this loop resumes. Dropping the future detaches it.
    (void)ito::create_thread(connection, fd);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const http::settings s = http::parse_args(argc, argv, usage);
  http::raise_descriptor_limit();
  signal(SIGPIPE, SIG_IGN);
  g_request_timeout_ms = s.request_timeout_ms;
  ito::options o;
  o.workers = s.workers;
  ito::runtime rt(o);
  const int listen_fd = http::listen_on(s.port);
  std::printf("httpd (ito, %u workers): http://127.0.0.1:%d/\n", rt.workers(), s.port);
  std::fflush(stdout);
  // The acceptor is an ordinary ULT (the main one is bound to worker 0 and
  // would start connections help-first).
  ito::join(ito::create_thread(accept_loop, listen_fd));
}
