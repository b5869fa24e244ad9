/* SPDX-License-Identifier: Apache-2.0 */
/* BENCHMARKS.md, "File reads under the preload": run under NPTL and under
 * libito-preload.so; prints ns per open+read+close. Build: cc -O2 file_reads.c -lpthread */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
/* 16 threads, each 5000 x (open a file, read 200 bytes, close): ns per
 * open+read+close. The file: argv[1], else /etc/services (page cache). */
static const char* path = "/etc/services";
enum { THREADS = 16, ITERS = 5000 };
static void* body(void* a) {
  char buf[200];
  for (int i = 0; i < ITERS; ++i) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof buf) != sizeof buf) abort();
    close(fd);
  }
  return a;
}
int main(int argc, char** argv) {
  if (argc > 1) path = argv[1];
  struct timespec s, e;
  pthread_t t[THREADS];
  clock_gettime(CLOCK_MONOTONIC, &s);
  for (int i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, body, NULL);
  for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &e);
  printf("%.0f\n", ((e.tv_sec - s.tv_sec) * 1e9 + (e.tv_nsec - s.tv_nsec)) / (THREADS * ITERS));
}
