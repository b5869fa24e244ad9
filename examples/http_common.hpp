// SPDX-License-Identifier: Apache-2.0
// What both example servers share: command line, listening socket, and one
// connection's loop (HTTP/1.1 keep-alive, pipelining, a static response). The
// loop is written once over an "io" policy, so the two servers differ only in
// how they wait: ito::io parks a ULT, the plain calls block an OS thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
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
  int request_timeout_ms = 10'000;  // a request must arrive whole within this
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
    else if (a == "--request-timeout-ms") s.request_timeout_ms = static_cast<int>(value());
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

inline std::int64_t monotonic_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1'000'000;
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
  bool http10 = false;  // an HTTP/1.0 client keeps the connection only when told so
};

// A Content-Length: digits only, and no larger than a request this server
// can hold (a huge value must not wrap the request's length).
inline bool parse_length(std::string_view v, std::size_t limit, std::size_t* out) {
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.empty()) return false;
  std::size_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<std::size_t>(c - '0');
    if (n > limit) return false;
  }
  *out = n;
  return true;
}

inline bool header_is(std::string_view line, std::string_view name, std::string_view* value) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  if (strncasecmp(line.data(), name.data(), name.size()) != 0) return false;
  std::string_view v = line.substr(name.size() + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  *value = v;
  return true;
}

// The last coding a Transfer-Encoding value names ("gzip, chunked": chunked).
inline std::string_view last_coding(std::string_view v) {
  const std::size_t comma = v.rfind(',');
  if (comma != std::string_view::npos) v.remove_prefix(comma + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

inline int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A chunked body starting at `pos` (RFC 9112 section 7.1): chunks of
// "size[;extension]\r\n" data "\r\n", a last chunk of size 0, trailer lines
// and an empty line. Complete: *end is one past it. A chunk size past 1 MiB
// is bad (it must not wrap; a request that does not fit the buffer gets 431
// anyway).
inline decltype(request::state) chunked_body(std::string_view buf, std::size_t pos,
                                             std::size_t* end) {
  constexpr std::size_t largest_chunk = 1 << 20;
  for (;;) {
    const std::size_t eol = buf.find("\r\n", pos);
    if (eol == std::string_view::npos) return request::incomplete;
    std::string_view line = buf.substr(pos, eol - pos);
    std::size_t size = 0, digits = 0;
    for (; digits < line.size() && hex_digit(line[digits]) >= 0; ++digits) {
      size = size * 16 + static_cast<std::size_t>(hex_digit(line[digits]));
      if (size > largest_chunk) return request::bad;
    }
    if (digits == 0) return request::bad;
    std::string_view rest = line.substr(digits);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    if (!rest.empty() && rest.front() != ';') return request::bad;
    pos = eol + 2;
    if (size == 0) {  // the trailer section, up to an empty line
      for (;;) {
        const std::size_t t = buf.find("\r\n", pos);
        if (t == std::string_view::npos) return request::incomplete;
        const bool empty_line = t == pos;
        pos = t + 2;
        if (empty_line) {
          *end = pos;
          return request::complete;
        }
      }
    }
    if (buf.size() - pos < size + 2) return request::incomplete;
    if (buf.substr(pos + size, 2) != "\r\n") return request::bad;
    pos += size + 2;
  }
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
  r.http10 = line.substr(sp + 1) == "HTTP/1.0";
  r.keep_alive = !r.http10;  // 1.0 closes unless asked
  std::size_t body = 0;
  bool has_length = false;
  bool chunked = false;  // Transfer-Encoding seen; true while its last coding is chunked
  bool has_transfer_encoding = false;
  for (std::size_t pos = eol + 2; pos < head.size();) {
    const std::size_t next = head.find("\r\n", pos);
    std::string_view h = head.substr(pos, next - pos), v;
    if (header_is(h, "Connection", &v)) {
      if (strncasecmp(v.data(), "close", 5) == 0) r.keep_alive = false;
      else if (strncasecmp(v.data(), "keep-alive", 10) == 0) r.keep_alive = true;
    } else if (header_is(h, "Content-Length", &v)) {
      std::size_t length = 0;
      // Longer than what we could ever hold, or a second Content-Length that
      // says another length (RFC 9112 section 6.3: which one the body has
      // cannot be known; the same value twice is one length).
      if (!parse_length(v, n, &length) || (has_length && length != body)) {
        r.state = request::bad;
        return r;
      }
      body = length;
      has_length = true;
    } else if (header_is(h, "Transfer-Encoding", &v)) {
      // The codings of several fields add up: the last field's last one counts.
      has_transfer_encoding = true;
      const std::string_view coding = last_coding(v);
      chunked = coding.size() == 7 && strncasecmp(coding.data(), "chunked", 7) == 0;
    }
    pos = next + 2;
  }
  if (has_transfer_encoding) {
    // RFC 9112 section 6.3: with Content-Length as well, or a last coding
    // other than chunked, or in HTTP/1.0, the body's length cannot be known
    // for sure: 400 and close (reading one length while a proxy in front read
    // the other is request smuggling). Else the body is chunked: read it as
    // the body, never as the next request.
    if (has_length || !chunked || r.http10) {
      r.state = request::bad;
      return r;
    }
    std::size_t message_end = 0;
    r.state = chunked_body(buf, end + 4, &message_end);
    if (r.state == request::complete) r.length = message_end;
    return r;
  }
  r.length = end + 4 + body;
  r.state = n >= r.length ? request::complete : request::incomplete;
  return r;
}

inline constexpr std::string_view body = "Hello, World!\n";
inline constexpr std::string_view ok_keep_alive =
    "HTTP/1.1 200 OK\r\nServer: ito-example\r\nContent-Type: text/plain\r\n"
    "Content-Length: 14\r\n\r\nHello, World!\n";
inline constexpr std::string_view ok_keep_alive_http10 =
    "HTTP/1.1 200 OK\r\nServer: ito-example\r\nContent-Type: text/plain\r\n"
    "Content-Length: 14\r\nConnection: keep-alive\r\n\r\nHello, World!\n";
inline constexpr std::string_view ok_close =
    "HTTP/1.1 200 OK\r\nServer: ito-example\r\nContent-Type: text/plain\r\n"
    "Content-Length: 14\r\nConnection: close\r\n\r\nHello, World!\n";
inline constexpr std::string_view bad_request =
    "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
inline constexpr std::string_view timed_out =
    "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
inline constexpr std::string_view too_large =
    "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

// Serves one connection until the client closes or asks to. Small buffers on
// purpose: they live on the connection's stack, and stacks are the memory a
// server with 10,000 connections holds (a request head up to 512 bytes; a
// longer one gets 431). A request must arrive whole within timeout_ms of the
// previous answer (or of the connection): an idle or slow (slowloris) client
// is dropped instead of holding its stack forever.
template <class Io>
void serve(Io& io, int fd, int timeout_ms) {
  char in[512];
  char out[512];
  std::size_t have = 0;
  bool open = true;
  std::int64_t deadline = io.now_ms() + timeout_ms;
  while (open) {
    // Without waiting first (what is there is read in one call); else wait,
    // but only until the request's deadline.
    const ssize_t n = io.recv(fd, in + have, sizeof in - have, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const std::int64_t left = deadline - io.now_ms();
      if (left > 0 && io.wait_readable(fd, static_cast<int>(left))) continue;
      if (have > 0) io.send(fd, timed_out.data(), timed_out.size());  // part of a request came
      break;
    }
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
      reply(!r.keep_alive ? ok_close : r.http10 ? ok_keep_alive_http10 : ok_keep_alive);
      used += r.length;
      if (!r.keep_alive) open = false;
    }
    if (pending && io.send(fd, out, pending) != static_cast<ssize_t>(pending)) break;
    if (used > 0) {
      std::memmove(in, in + used, have - used);
      have -= used;
      deadline = io.now_ms() + timeout_ms;  // the next request's time starts now
    } else if (have == sizeof in) {
      io.send(fd, too_large.data(), too_large.size());
      break;
    }
  }
  io.close(fd);
}

}  // namespace http
