/* SPDX-License-Identifier: Apache-2.0 */
/* Prints how many OS threads the process has before its first thread, and
 * after it made one and joined it: under libito-preload.so the runtime's
 * worker threads start with the first thread, not at load
 * (PosixPreload.WorkersStartWithTheFirstThread). */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>

static int tasks(void) {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  for (struct dirent* e; (e = readdir(d));)
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

static void* nothing(void* arg) { return arg; }

int main(void) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER; /* a lock alone starts no thread */
  pthread_mutex_lock(&m);
  pthread_mutex_unlock(&m);
  printf("before: %d\n", tasks());
  pthread_t t;
  if (pthread_create(&t, NULL, nothing, NULL) != 0 || pthread_join(t, NULL) != 0) return 1;
  printf("after: %d\n", tasks());
  return 0;
}
