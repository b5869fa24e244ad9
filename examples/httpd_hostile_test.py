#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile clients against an example server (httpd or httpd-threads).

Usage: httpd_hostile_test.py SERVER [server args...]
Starts SERVER on a free loopback port with a 500 ms request timeout and
checks, each case bounded in time:
  - a Content-Length near 2^64 is refused (400) instead of wrapping, and two
    such clients that keep pipelining do not stop a third from being served;
  - a connection that sends nothing, or half a request, is closed after the
    request timeout (408 for the half request);
  - an HTTP/1.0 client that asks for keep-alive is told so and can send a
    second request on the same connection;
  - a client that pipelines without end does not starve another client;
  - a request whose body length is ambiguous (two different Content-Length
    values, Content-Length beside Transfer-Encoding, a Transfer-Encoding whose
    last coding is not chunked) gets 400 and the connection is closed
    (RFC 9112 section 6.3), and a chunked body is read as the body, never as
    the next request.
Exits 1 with a message on the first failure."""
import os
import socket
import subprocess
import sys
import threading
import time

OK = b"HTTP/1.1 200 OK"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def connect(port, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s


def read_until_closed(s, limit=1 << 16):
    data = b""
    try:
        while len(data) < limit:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        return data, False
    return data, True


def one_request(port, timeout=3.0):
    s = connect(port, timeout)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data, closed = read_until_closed(s)
    s.close()
    return data


def main():
    server = sys.argv[1:]
    port = free_port()
    proc = subprocess.Popen(server + ["--port", str(port), "--request-timeout-ms", "500"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                connect(port, 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            fail("the server did not start")

        # A huge Content-Length: 400, never a wrapped length.
        s = connect(port)
        s.sendall(b"POST / HTTP/1.1\r\nContent-Length: 18446744073709551560\r\n\r\n")
        data, closed = read_until_closed(s)
        s.close()
        if not data.startswith(b"HTTP/1.1 400"):
            fail("huge Content-Length answered %r" % data[:40])

        # Ambiguous framing (request smuggling): 400, then the server closes.
        # Each is sent with a complete-looking body, so a server that picks
        # one of the lengths answers 200 (or waits) instead.
        for what, req in (
                ("two different Content-Length values",
                 b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                 b"Content-Length: 5\r\n\r\nhello"),
                ("two different Content-Length values, the longer first",
                 b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n"
                 b"Content-Length: 5\r\n\r\nhello"),
                ("Content-Length and Transfer-Encoding",
                 b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                ("Transfer-Encoding and Content-Length",
                 b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                 b"Content-Length: 0\r\n\r\n0\r\n\r\n"),
                ("a Transfer-Encoding that does not end in chunked",
                 b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n"
                 b"\r\nhello"),
                ("Transfer-Encoding in an HTTP/1.0 request",
                 b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")):
            s = connect(port)
            s.sendall(req)
            start = time.monotonic()
            data, closed = read_until_closed(s)
            took = time.monotonic() - start
            s.close()
            if not data.startswith(b"HTTP/1.1 400"):
                fail("%s answered %r" % (what, data[:40]))
            if data.count(b"HTTP/1.1") != 1:
                fail("%s answered more than once: %r" % (what, data))
            if not closed or took > 3.0:
                fail("%s: the connection was held %.1f s after the 400" % (what, took))

        # The same value twice is one length (RFC 9112 section 6.3 allows it).
        s = connect(port)
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                  b"Content-Length: 5\r\nConnection: close\r\n\r\nhello")
        data, closed = read_until_closed(s)
        s.close()
        if not data.startswith(OK) or data.count(b"HTTP/1.1") != 1:
            fail("a repeated equal Content-Length answered %r" % data[:80])

        # A chunked body is the request's body: the request in it is not
        # answered, the one after it is (two answers, not three).
        s = connect(port)
        inner = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  + b"%x\r\n" % len(inner) + inner + b"\r\n0\r\n\r\n"
                  + b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data, closed = read_until_closed(s)
        s.close()
        if data.count(OK) != 2 or b"400" in data:
            fail("a chunked request and one after it were answered %r" % data[:300])

        # Two clients that pipeline without end must not stop a third.
        stop = threading.Event()

        def flood():
            try:
                f = connect(port)
                f.settimeout(0.5)
                req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 16
                while not stop.is_set():
                    f.sendall(req)
                    try:
                        f.recv(65536)
                    except socket.timeout:
                        pass
                f.close()
            except OSError:
                pass

        floods = [threading.Thread(target=flood) for _ in range(2)]
        for t in floods:
            t.start()
        time.sleep(0.3)
        start = time.monotonic()
        answer = one_request(port)
        took = time.monotonic() - start
        stop.set()
        for t in floods:
            t.join()
        if not answer.startswith(OK):
            fail("a client beside two pipelining floods got %r" % answer[:40])
        if took > 2.0:
            fail("a client beside two pipelining floods waited %.1f s" % took)

        # Idle and slow (slowloris) connections are closed after the timeout.
        for partial in (b"", b"GET / HTTP/1.1\r\nHost:"):
            s = connect(port)
            if partial:
                s.sendall(partial)
            start = time.monotonic()
            data, closed = read_until_closed(s)
            took = time.monotonic() - start
            s.close()
            if not closed or took > 3.0:
                fail("a connection that sent %r was held %.1f s" % (partial, took))
            if partial and not data.startswith(b"HTTP/1.1 408"):
                fail("half a request was answered %r" % data[:40])

        # HTTP/1.0 keep-alive: said so, and the connection stays open.
        s = connect(port)
        s.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        first = s.recv(4096)
        if b"Connection: keep-alive" not in first:
            fail("HTTP/1.0 keep-alive answered %r" % first)
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        second, closed = read_until_closed(s)
        s.close()
        if not second.startswith(OK) or not closed:
            fail("a second HTTP/1.0 request on a kept connection got %r" % second[:40])

        if proc.poll() is not None:
            fail("the server died: %r" % proc.stdout.read())
        print("ok: %s survived the hostile clients" % os.path.basename(server[0]))
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
