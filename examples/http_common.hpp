// SPDX-License-Identifier: Apache-2.0
// What both example servers share: command line, listening socket, and one
// connection's loop (HTTP/1.1 keep-alive, pipelining, a static response). The
// loop is written once over an "io" policy, so the two servers differ only in
// how they wait: ito::io parks a ULT, the plain calls block an OS thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace http {

struct settings {
  int port = 8080;
  unsigned workers = 0;  // httpd only; 0: ito's default (ITO_WORKERS or the CPUs)
  std::size_t stack_kib = 64;  // httpd-threads only: each thread's stack
};

inline settings parse_args(int argc, char** argv, const char* usage) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n%s", argv[0], a.c_str(), usage);
        std::exit(2);
      }
      char* end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end || v < 0) {
        std::fprintf(stderr, "%s: bad value for %s\n%s", argv[0], a.c_str(), usage);
        std::exit(2);
      }
      return v;
    };
    if (a == "--port") s.port = static_cast<int>(value());
    else if (a == "--workers") s.workers = static_cast<unsigned>(value());
    else if (a == "--stack-kib") s.stack_kib = static_cast<std::size_t>(value());
    else {
      std::fprintf(stderr, "%s", usage);
      std::exit(a == "-h" || a == "--help" ? 0 : 2);
    }
  }
  return s;
}

// 10,000 connections need 10,000 descriptors: take the hard limit.
inline void raise_descriptor_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

inline int listen_on(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    std::perror("listen");
    std::exit(1);
  }
  return fd;
}

inline void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// One request at the front of a buffer.
struct request {
  enum { incomplete, complete, bad } state = incomplete;
  std::size_t length = 0;  // head + body
  bool keep_alive = true;
};

inline bool header_is(std::string_view line, std::string_view name, std::string_view* value) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  if (strncasecmp(line.data(), name.data(), name.size()) != 0) return false;
  std::string_view v = line.substr(name.size() + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  *value = v;
  return true;
}

inline request scan(const char* data, std::size_t n) {
  request r;
  std::string_view buf(data, n);
  const std::size_t end = buf.find("\r\n\r\n");
  if (end == std::string_view::npos) return r;
  std::string_view head = buf.substr(0, end + 2);
  const std::size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  // "METHOD target HTTP/1.x"
  const std::size_t sp = line.rfind(' ');
  if (sp == std::string_view::npos || line.substr(sp + 1, 7) != "HTTP/1.") {
    r.state = request::bad;
    return r;
  }
  r.keep_alive = line.substr(sp + 1) != "HTTP/1.0";  // 1.0 closes unless asked
  std::size_t body = 0;
  for (std::size_t pos = eol + 2; pos < head.size();) {
    const std::size_t next = head.find("\r\n", pos);
    std::string_view h = head.substr(pos, next - pos), v;
    if (header_is(h, "Connection", &v)) {
      if (strncasecmp(v.data(), "close", 5) == 0) r.keep_alive = false;
      else if (strncasecmp(v.data(), "keep-alive", 10) == 0) r.keep_alive = true;
    } else if (header_is(h, "Content-Length", &v)) {
      body = std::strtoul(std::string(v).c_str(), nullptr, 10);
    }
    pos = next + 2;
  }
  r.length = end + 4 + body;
  r.state = n >= r.length ? request::complete : request::incomplete;
  return r;
}

inline constexpr std::string_view body = "Hello, World!\n";
inline constexpr std::string_view ok_keep_alive =
    "HTTP/1.1 200 OK\r\nServer: ito-example\r\nContent-Type: text/plain\r\n"
    "Content-Length: 14\r\n\r\nHello, World!\n";
inline constexpr std::string_view ok_close =
    "HTTP/1.1 200 OK\r\nServer: ito-example\r\nContent-Type: text/plain\r\n"
    "Content-Length: 14\r\nConnection: close\r\n\r\nHello, World!\n";
inline constexpr std::string_view bad_request =
    "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
inline constexpr std::string_view too_large =
    "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

// Serves one connection until the client closes or asks to. Small buffers on
// purpose: they live on the connection's stack, and stacks are the memory a
// server with 10,000 connections holds (a request head up to 512 bytes; a
// longer one gets 431).
template <class Io>
void serve(Io& io, int fd) {
  char in[512];
  char out[512];
  std::size_t have = 0;
  bool open = true;
  while (open) {
    const ssize_t n = io.recv(fd, in + have, sizeof in - have);
    if (n <= 0) break;
    have += static_cast<std::size_t>(n);
    std::size_t used = 0, pending = 0;
    auto reply = [&](std::string_view r) {
      if (pending + r.size() > sizeof out) {
        if (io.send(fd, out, pending) != static_cast<ssize_t>(pending)) open = false;
        pending = 0;
      }
      std::memcpy(out + pending, r.data(), r.size());
      pending += r.size();
    };
    // Every complete request in the buffer (clients may pipeline).
    while (open) {
      const request r = scan(in + used, have - used);
      if (r.state == request::incomplete) break;
      if (r.state == request::bad) {
        reply(bad_request);
        open = false;
        break;
      }
      reply(r.keep_alive ? ok_keep_alive : ok_close);
      used += r.length;
      if (!r.keep_alive) open = false;
    }
    if (pending && io.send(fd, out, pending) != static_cast<ssize_t>(pending)) break;
    if (used > 0) {
      std::memmove(in, in + used, have - used);
      have -= used;
    } else if (have == sizeof in) {
      io.send(fd, too_large.data(), too_large.size());
      break;
    }
  }
  io.close(fd);
}

}  // namespace http
