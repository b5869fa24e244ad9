/* SPDX-License-Identifier: Apache-2.0 */
/* Threads that block in system calls: sleeps (sleep, usleep, nanosleep, poll
 * with no descriptor), pipe hand-offs (read/write), a socketpair echo
 * (send/recv) and a loopback server (accept/connect/read/write/close).
 * Under ito each blocked thread must park alone: had a call blocked its
 * worker, the sleeps alone would take threads x 600 ms / workers (120 s for
 * 800 threads on 4 workers) instead of about 600 ms; the bound (a third of
 * that) leaves room for slow thread creation under a sanitizer. Prints the
 * same lines under NPTL and ito. */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PAIRS 50
#define CLIENTS 20

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

static void* sleeper(void* arg) {
  (void)arg;
  struct timespec ts = {0, 200 * 1000 * 1000};
  check(usleep(200 * 1000) == 0, "usleep");
  check(nanosleep(&ts, NULL) == 0, "nanosleep");
  check(poll(NULL, 0, 200) == 0, "poll");
  return NULL;
}

static void* one_second(void* arg) {
  (void)arg;
  check(sleep(1) == 0, "sleep");
  return NULL;
}

/* Pipes: the reader blocks until its writer, after a nap, writes. */
static int pipes[PAIRS][2];
static void* pipe_reader(void* arg) {
  int i = (int)(long)arg;
  int v = -1;
  check(read(pipes[i][0], &v, sizeof v) == (ssize_t)sizeof v && v == i, "pipe read");
  return NULL;
}
static void* pipe_writer(void* arg) {
  int i = (int)(long)arg;
  usleep(20 * 1000);
  check(write(pipes[i][1], &i, sizeof i) == (ssize_t)sizeof i, "pipe write");
  return NULL;
}

/* Socketpairs: ping, pong. */
static int pairs[PAIRS][2];
static void* echo_side(void* arg) {
  int i = (int)(long)arg;
  char buf[4];
  check(recv(pairs[i][1], buf, 4, MSG_WAITALL) == 4 && !memcmp(buf, "ping", 4), "recv ping");
  check(send(pairs[i][1], "pong", 4, 0) == 4, "send pong");
  return NULL;
}
static void* ping_side(void* arg) {
  int i = (int)(long)arg;
  char buf[4];
  usleep(10 * 1000);
  check(send(pairs[i][0], "ping", 4, 0) == 4, "send ping");
  check(recv(pairs[i][0], buf, 4, MSG_WAITALL) == 4 && !memcmp(buf, "pong", 4), "recv pong");
  return NULL;
}

/* A loopback server: one thread accepts and echoes each client in turn. */
static int listener;
static struct sockaddr_in server_addr;
static void* server(void* arg) {
  (void)arg;
  for (int n = 0; n < CLIENTS; ++n) {
    int c = accept(listener, NULL, NULL);
    check(c >= 0, "accept");
    int v = 0;
    check(read(c, &v, sizeof v) == (ssize_t)sizeof v, "server read");
    v += 1000;
    check(write(c, &v, sizeof v) == (ssize_t)sizeof v, "server write");
    check(close(c) == 0, "server close");
  }
  return NULL;
}
static void* client(void* arg) {
  int i = (int)(long)arg;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  check(fd >= 0, "socket");
  check(connect(fd, (struct sockaddr*)&server_addr, sizeof server_addr) == 0, "connect");
  check(write(fd, &i, sizeof i) == (ssize_t)sizeof i, "client write");
  int v = -1;
  check(read(fd, &v, sizeof v) == (ssize_t)sizeof v && v == i + 1000, "client read");
  char end;
  check(read(fd, &end, 1) == 0, "client sees the close");
  check(close(fd) == 0, "client close");
  return NULL;
}

static void run_all(pthread_t* t, int n, void* (*fn)(void*), long first) {
  for (int i = 0; i < n; ++i)
    check(pthread_create(&t[i], NULL, fn, (void*)(first + i)) == 0, "pthread_create");
}
static void join_all(pthread_t* t, int n) {
  for (int i = 0; i < n; ++i) check(pthread_join(t[i], NULL) == 0, "pthread_join");
}

int main(int argc, char** argv) {
  const int sleepers = argc > 1 ? atoi(argv[1]) : 800;
  pthread_t* t = malloc(sizeof(pthread_t) * (size_t)(sleepers + 1));
  check(t != NULL, "malloc");

  double t0 = now_s();
  run_all(t, sleepers, sleeper, 0);
  check(pthread_create(&t[sleepers], NULL, one_second, NULL) == 0, "pthread_create");
  join_all(t, sleepers + 1);
  double elapsed = now_s() - t0;
  /* 1 s for the sleep(1) thread; a blocked worker would add seconds. */
  printf("%d sleeping threads: %s\n", sleepers,
         elapsed < 1.0 + sleepers * 0.6 / 4 / 3 ? "overlapped" : "serialised");

  pthread_t readers[PAIRS], writers[PAIRS];
  for (int i = 0; i < PAIRS; ++i) check(pipe(pipes[i]) == 0, "pipe");
  run_all(readers, PAIRS, pipe_reader, 0);
  run_all(writers, PAIRS, pipe_writer, 0);
  join_all(readers, PAIRS);
  join_all(writers, PAIRS);
  for (int i = 0; i < PAIRS; ++i) close(pipes[i][0]), close(pipes[i][1]);
  printf("%d pipe hand-offs: ok\n", PAIRS);

  for (int i = 0; i < PAIRS; ++i)
    check(socketpair(AF_UNIX, SOCK_STREAM, 0, pairs[i]) == 0, "socketpair");
  run_all(readers, PAIRS, echo_side, 0);
  run_all(writers, PAIRS, ping_side, 0);
  join_all(readers, PAIRS);
  join_all(writers, PAIRS);
  for (int i = 0; i < PAIRS; ++i) close(pairs[i][0]), close(pairs[i][1]);
  printf("%d socketpair echoes: ok\n", PAIRS);

  listener = socket(AF_INET, SOCK_STREAM, 0);
  check(listener >= 0, "socket");
  server_addr.sin_family = AF_INET;
  server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  server_addr.sin_port = 0;
  check(bind(listener, (struct sockaddr*)&server_addr, sizeof server_addr) == 0, "bind");
  socklen_t len = sizeof server_addr;
  check(getsockname(listener, (struct sockaddr*)&server_addr, &len) == 0, "getsockname");
  check(listen(listener, CLIENTS) == 0, "listen");
  pthread_t srv, clients[CLIENTS];
  check(pthread_create(&srv, NULL, server, NULL) == 0, "pthread_create");
  run_all(clients, CLIENTS, client, 0);
  join_all(clients, CLIENTS);
  check(pthread_join(srv, NULL) == 0, "pthread_join");
  close(listener);
  printf("%d loopback clients: ok\n", CLIENTS);
  free(t);
  return 0;
}
