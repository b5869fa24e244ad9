/* SPDX-License-Identifier: Apache-2.0 */
/* Every family of blocking call a threaded program commonly makes, with
 * several threads blocked in it at once (docs/POSIX.md, "Blocking calls"):
 * clock_nanosleep (both clocks, relative and absolute) and thrd_sleep,
 * socket reads and writes that time out by SO_RCVTIMEO/SO_SNDTIMEO, the
 * vector, address and message socket calls, readv/__read_chk on pipes and
 * FIFO opens (openat, open64, creat), wait4, pause, file locks (flock,
 * fcntl F_SETLKW and F_OFD_SETLKW, lockf), System V messages and
 * semaphores, POSIX message queues, epoll_pwait2, getaddrinfo.
 *
 * Run at ITO_WORKERS=1: a call that blocks its worker either serialises the
 * waits (each phase must take clearly less than the serial sum: the program
 * checks it and exits 1, printing "serialised") or keeps the thread that
 * would end the wait from running (the alarm ends the program). Prints the
 * same lines under NPTL and ito. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/msg.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

/* glibc's _FORTIFY_SOURCE entry point of read, called as a fortified read
 * with a known buffer size would. */
extern ssize_t __read_chk(int fd, void* buf, size_t count, size_t buflen);

/* errno read after a call that may switch: its address asked afresh. The
 * compiler may keep __errno_location()'s result (a const function) from
 * before the call, and the thread may resume on another worker, whose errno
 * is another thread's (docs/POSIX.md, "TLS and errno"); TSan saw the race. */
static int* (*volatile errno_at)(void) = __errno_location;
#define ERRNO (*errno_at())

#define WAIT_MS 150
#define MAX_THREADS 8

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "%s: %s\n", what, strerror(errno));
    exit(1);
  }
}

static void nap(void) { usleep(WAIT_MS * 1000); }

/* A phase: n waiters (and wakers that nap, then end the waits) started
 * together; all must be done in well under n waits. */
static pthread_t threads[2 * MAX_THREADS];
static int started;
static double phase_start;
static void start_phase(void) {
  started = 0;
  phase_start = now_s();
}
static void spawn(void* (*fn)(void*), long arg) {
  check(pthread_create(&threads[started++], NULL, fn, (void*)arg) == 0, "pthread_create");
}
static void join_phase(void) {
  for (int i = 0; i < started; ++i) check(pthread_join(threads[i], NULL) == 0, "pthread_join");
}
static void end_phase(const char* name, int waiters) {
  for (int i = 0; i < started; ++i) check(pthread_join(threads[i], NULL) == 0, "pthread_join");
  const double elapsed = now_s() - phase_start;
  const double serial = waiters * WAIT_MS / 1000.0;
  /* Overlapped: about one wait. Serialised: `waiters` waits. The margin
   * between is wide for a loaded machine (CI saw 4 overlapped waits take
   * 2.8 waits' time): half a wait short of the serial sum, at least 2.5. */
  const double limit = waiters - 0.5 > 2.5 ? waiters - 0.5 : 2.5;
  const int overlapped = elapsed < limit * WAIT_MS / 1000.0;
  printf("%s: %d %s %s\n", name, waiters, waiters == 1 ? "wait" : "waits",
         overlapped ? "overlapped" : "serialised");
  if (!overlapped) {
    fprintf(stderr, "%s: %.3f s, serial sum %.3f s\n", name, elapsed, serial);
    exit(1);
  }
}

/* clock_nanosleep: each thread one clock and mode. */
static void* clock_sleeper(void* arg) {
  const long i = (long)arg;
  const clockid_t clock = i & 1 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
  struct timespec t = {0, WAIT_MS * 1000000L};
  int flags = 0;
  if (i & 2) {
    struct timespec now;
    clock_gettime(clock, &now);
    t.tv_sec = now.tv_sec;
    t.tv_nsec = now.tv_nsec + WAIT_MS * 1000000L;
    if (t.tv_nsec >= 1000000000L) t.tv_sec += 1, t.tv_nsec -= 1000000000L;
    flags = TIMER_ABSTIME;
  }
  ERRNO = 0;
  const int r = clock_nanosleep(clock, flags, &t, NULL);
  check(r == 0 && ERRNO == 0, "clock_nanosleep");
  return NULL;
}

static void* clock_errors(void* arg) {
  (void)arg;
  struct timespec bad = {0, 1000000000L}, zero = {0, 0}, negative = {-1, 0};
  ERRNO = 1234;
  const int e1 = clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL);
  const int e2 = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &negative, NULL);
  const int e3 = clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &zero, NULL);
  const int e4 = clock_nanosleep((clockid_t)12345, 0, &zero, NULL);
  const int e5 = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &zero, NULL); /* past */
  printf("clock_nanosleep errors: %s %s %s %s %d, errno kept: %s\n", strerror(e1), strerror(e2),
         strerror(e3), strerror(e4), e5, ERRNO == 1234 ? "yes" : "no");
  return NULL;
}

static void* c11_sleeper(void* arg) {
  (void)arg;
  struct timespec t = {0, WAIT_MS * 1000000L};
  check(thrd_sleep(&t, NULL) == 0, "thrd_sleep");
  return NULL;
}

/* Socket time-outs: each thread's socket has SO_RCVTIMEO (or SO_SNDTIMEO
 * and a full buffer); the call fails with EAGAIN after it. */
static int timed[MAX_THREADS][2];
static void set_timeout(int fd, int option) {
  struct timeval tv = {0, WAIT_MS * 1000L};
  check(setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv) == 0, "setsockopt");
}
static void* timed_reader(void* arg) {
  const long i = (long)arg;
  const int fd = timed[i][0];
  char buf[8];
  struct iovec v = {buf, sizeof buf};
  struct msghdr m = {0};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  struct sockaddr_storage from;
  socklen_t len = sizeof from;
  ssize_t r = 0;
  switch (i) {
    case 0: r = read(fd, buf, sizeof buf); break;
    case 1: r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr*)&from, &len); break;
    case 2: r = recvmsg(fd, &m, 0); break;
    default: r = readv(fd, &v, 1); break;
  }
  check(r == -1 && (ERRNO == EAGAIN || ERRNO == EWOULDBLOCK), "timed read");
  return NULL;
}
static void* timed_writer(void* arg) {
  const long i = (long)arg;
  const int fd = timed[i][0];
  char byte = 'x';
  struct iovec v = {&byte, 1};
  struct msghdr m = {0};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  ssize_t r = 0;
  switch (i) {
    case 0: r = write(fd, &byte, 1); break;
    case 1: r = send(fd, &byte, 1, 0); break;
    case 2: r = sendmsg(fd, &m, 0); break;
    default: r = writev(fd, &v, 1); break;
  }
  check(r == -1 && (ERRNO == EAGAIN || ERRNO == EWOULDBLOCK), "timed write");
  return NULL;
}
static void fill(int fd) {
  static char chunk[4096];
  while (send(fd, chunk, sizeof chunk, MSG_DONTWAIT) > 0) {
  }
  check(ERRNO == EAGAIN || ERRNO == EWOULDBLOCK, "fill");
}

/* Socket data: readers wait in readv, recvfrom (UDP), recvmsg, recvmmsg;
 * their writers nap, then use writev, sendto, sendmsg, sendmmsg. */
static int stream[3][2], udp_in, udp_out;
static struct sockaddr_in udp_addr;
static void* socket_reader(void* arg) {
  const long i = (long)arg;
  char buf[4] = {0};
  struct iovec v[2] = {{buf, 2}, {buf + 2, 2}};
  struct msghdr m = {0};
  m.msg_iov = v;
  m.msg_iovlen = 2;
  struct sockaddr_in from;
  socklen_t len = sizeof from;
  struct mmsghdr mm[1];
  memset(mm, 0, sizeof mm);
  mm[0].msg_hdr = m;
  ssize_t r = 0;
  switch (i) {
    case 0: r = readv(stream[0][0], v, 2); break;
    case 1:
      r = recvfrom(udp_in, buf, 4, 0, (struct sockaddr*)&from, &len);
      check(len == sizeof from && from.sin_family == AF_INET, "recvfrom address");
      break;
    case 2: r = recvmsg(stream[1][0], &m, MSG_WAITALL); break;
    default:
      r = recvmmsg(stream[2][0], mm, 1, 0, NULL) == 1 ? (ssize_t)mm[0].msg_len : -1;
      break;
  }
  check(r == 4 && !memcmp(buf, "data", 4), "socket read");
  return NULL;
}
static void* socket_writer(void* arg) {
  const long i = (long)arg;
  if (i != 2) nap();
  struct iovec v[2] = {{"da", 2}, {"ta", 2}};
  struct msghdr m = {0};
  m.msg_iov = v;
  m.msg_iovlen = 2;
  struct mmsghdr mm[1];
  memset(mm, 0, sizeof mm);
  mm[0].msg_hdr = m;
  ssize_t r = 0;
  switch (i) {
    case 0: r = writev(stream[0][1], v, 2); break;
    case 1: r = sendto(udp_out, "data", 4, 0, (struct sockaddr*)&udp_addr, sizeof udp_addr); break;
    case 2:
      /* MSG_WAITALL: the reader waits for the second half too. */
      check(send(stream[1][1], "da", 2, 0) == 2, "send half");
      nap();
      r = 2 + send(stream[1][1], "ta", 2, 0);
      break;
    default: r = sendmmsg(stream[2][1], mm, 1, 0) == 1 ? (ssize_t)mm[0].msg_len : -1; break;
  }
  check(r == 4, "socket write");
  return NULL;
}

/* Pipes and FIFOs: readv and __read_chk on pipes, FIFO opens (openat and
 * open64 wait for a writer, creat for a reader). */
static int pipes[2][2];
static char fifo[3][64];
static void* pipe_waiter(void* arg) {
  const long i = (long)arg;
  char buf[4] = {0};
  struct iovec v = {buf, 4};
  int fd = -1;
  switch (i) {
    case 0: check(readv(pipes[0][0], &v, 1) == 4 && !memcmp(buf, "pipe", 4), "readv"); break;
    case 1:
      check(__read_chk(pipes[1][0], buf, 4, sizeof buf) == 4 && !memcmp(buf, "pipe", 4),
            "__read_chk");
      break;
    case 2: check((fd = openat(AT_FDCWD, fifo[0], O_RDONLY)) >= 0, "openat"); break;
    case 3: check((fd = open64(fifo[1], O_RDONLY)) >= 0, "open64"); break;
    default: check((fd = creat(fifo[2], 0600)) >= 0, "creat"); break;
  }
  if (fd >= 0) close(fd);
  return NULL;
}
static void* pipe_waker(void* arg) {
  const long i = (long)arg;
  nap();
  struct iovec v = {"pipe", 4};
  int fd = -1;
  switch (i) {
    case 0: check(writev(pipes[0][1], &v, 1) == 4, "writev"); break;
    case 1: check(write(pipes[1][1], "pipe", 4) == 4, "write"); break;
    case 2: check((fd = open(fifo[0], O_WRONLY)) >= 0, "open fifo"); break;
    case 3: check((fd = open(fifo[1], O_WRONLY)) >= 0, "open fifo"); break;
    default: check((fd = open(fifo[2], O_RDONLY)) >= 0, "open fifo"); break;
  }
  if (fd >= 0) close(fd);
  return NULL;
}

/* Children that wait for a byte on a pipe, then exit: their parent's
 * threads wait in wait4 until a waker writes the bytes. */
static int child_go[2];
static pid_t children[4];
static void* child_waiter(void* arg) {
  const long i = (long)arg;
  int status = 0;
  struct rusage usage;
  check(wait4(children[i], &status, 0, &usage) == children[i], "wait4");
  check(WIFEXITED(status) && WEXITSTATUS(status) == 10 + i, "wait4 status");
  return NULL;
}
static void* child_waker(void* arg) {
  (void)arg;
  nap();
  check(write(child_go[1], "gogo", 4) == 4, "write");
  return NULL;
}
static pid_t fork_waiting_child(int code) {
  const pid_t pid = fork();
  check(pid >= 0, "fork");
  if (pid == 0) {
    char c;
    /* The raw call: this process has one thread and nothing else to run. */
    if (syscall(SYS_read, child_go[0], &c, 1) != 1) syscall(SYS_exit_group, 99);
    syscall(SYS_exit_group, code);
  }
  return pid;
}

/* pause: a thread that alone leaves SIGUSR1 unblocked waits until main
 * signals it. */
static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig) {
  (void)sig;
  got_usr1 = 1;
}
static void* pauser(void* arg) {
  sigset_t* usr1 = arg;
  check(pthread_sigmask(SIG_UNBLOCK, usr1, NULL) == 0, "pthread_sigmask");
  while (!got_usr1) pause();
  return NULL;
}

/* File locks: a child holds them until told to go; threads wait for each. */
static int lock_fd[4];
static void* lock_waiter(void* arg) {
  const long i = (long)arg;
  struct flock fl = {0};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  switch (i) {
    case 0: check(flock(lock_fd[0], LOCK_EX) == 0, "flock"); break;
    case 1: check(fcntl(lock_fd[1], F_SETLKW, &fl) == 0, "fcntl F_SETLKW"); break;
    case 2: check(lockf(lock_fd[2], F_LOCK, 0) == 0, "lockf"); break;
    default: check(fcntl(lock_fd[3], F_OFD_SETLKW, &fl) == 0, "fcntl F_OFD_SETLKW"); break;
  }
  return NULL;
}

/* System V: two message receivers, a semop and a semtimedop that times out. */
static int msq, semid;
struct message {
  long type;
  char text[4];
};
static void* sysv_waiter(void* arg) {
  const long i = (long)arg;
  struct message m;
  struct sembuf down = {(unsigned short)(i - 2), -1, 0};
  struct timespec limit = {0, WAIT_MS * 1000000L};
  switch (i) {
    case 0:
    case 1:
      check(msgrcv(msq, &m, sizeof m.text, i + 1, 0) == 4 && !memcmp(m.text, "msg", 4), "msgrcv");
      break;
    case 2: check(semop(semid, &down, 1) == 0, "semop"); break;
    default:
      check(semtimedop(semid, &down, 1, &limit) == -1 && ERRNO == EAGAIN, "semtimedop");
      break;
  }
  return NULL;
}
static void* sysv_waker(void* arg) {
  (void)arg;
  nap();
  struct message m1 = {1, "msg"}, m2 = {2, "msg"};
  struct sembuf up = {0, 1, 0};
  check(msgsnd(msq, &m1, sizeof m1.text, 0) == 0, "msgsnd");
  check(msgsnd(msq, &m2, sizeof m2.text, 0) == 0, "msgsnd");
  check(semop(semid, &up, 1) == 0, "semop");
  return NULL;
}

/* POSIX message queues: a receiver woken by a send, a timed one that times
 * out. */
static mqd_t mq[2];
static void* mq_waiter(void* arg) {
  const long i = (long)arg;
  char buf[16];
  unsigned prio = 0;
  if (i == 0) {
    check(mq_receive(mq[0], buf, sizeof buf, &prio) == 2 && prio == 3, "mq_receive");
  } else {
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_nsec += WAIT_MS * 1000000L;
    if (limit.tv_nsec >= 1000000000L) limit.tv_sec += 1, limit.tv_nsec -= 1000000000L;
    check(mq_timedreceive(mq[1], buf, sizeof buf, &prio, &limit) == -1 && ERRNO == ETIMEDOUT,
          "mq_timedreceive");
  }
  return NULL;
}
static void* mq_waker(void* arg) {
  (void)arg;
  nap();
  check(mq_send(mq[0], "mq", 2, 3) == 0, "mq_send");
  return NULL;
}

static int epoll_supported = 1;
static void* epoll_waiter(void* arg) {
  (void)arg;
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  check(ep >= 0, "epoll_create1");
  struct epoll_event e;
  struct timespec limit = {0, WAIT_MS * 1000000L};
  const int r = epoll_pwait2(ep, &e, 1, &limit, NULL);
  if (r == -1 && ERRNO == ENOSYS)
    epoll_supported = 0;
  else
    check(r == 0, "epoll_pwait2");
  close(ep);
  return NULL;
}

static void* resolver(void* arg) {
  (void)arg;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  const int r = getaddrinfo("127.0.0.1", "80", &hints, &res);
  printf("getaddrinfo: %s\n", r == 0 && res && res->ai_family == AF_INET ? "ok" : gai_strerror(r));
  if (res) freeaddrinfo(res);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(30);

  start_phase();
  for (long i = 0; i < 4; ++i) spawn(clock_sleeper, i);
  end_phase("clock_nanosleep", 4);
  start_phase();
  spawn(clock_errors, 0);
  join_phase();
  start_phase();
  for (long i = 0; i < 4; ++i) spawn(c11_sleeper, i);
  end_phase("thrd_sleep", 4);

  for (int i = 0; i < 4; ++i) {
    check(socketpair(AF_UNIX, SOCK_STREAM, 0, timed[i]) == 0, "socketpair");
    set_timeout(timed[i][0], SO_RCVTIMEO);
  }
  start_phase();
  for (long i = 0; i < 4; ++i) spawn(timed_reader, i);
  end_phase("SO_RCVTIMEO read, recvfrom, recvmsg, readv", 4);
  for (int i = 0; i < 4; ++i) {
    set_timeout(timed[i][0], SO_SNDTIMEO);
    fill(timed[i][0]);
  }
  start_phase();
  for (long i = 0; i < 4; ++i) spawn(timed_writer, i);
  end_phase("SO_SNDTIMEO write, send, sendmsg, writev", 4);
  for (int i = 0; i < 4; ++i) close(timed[i][0]), close(timed[i][1]);

  for (int i = 0; i < 3; ++i) check(socketpair(AF_UNIX, SOCK_STREAM, 0, stream[i]) == 0, "socketpair");
  udp_in = socket(AF_INET, SOCK_DGRAM, 0);
  udp_out = socket(AF_INET, SOCK_DGRAM, 0);
  check(udp_in >= 0 && udp_out >= 0, "socket");
  udp_addr.sin_family = AF_INET;
  udp_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(bind(udp_in, (struct sockaddr*)&udp_addr, sizeof udp_addr) == 0, "bind");
  socklen_t len = sizeof udp_addr;
  check(getsockname(udp_in, (struct sockaddr*)&udp_addr, &len) == 0, "getsockname");
  start_phase();
  for (long i = 0; i < 4; ++i) spawn(socket_reader, i), spawn(socket_writer, i);
  end_phase("readv, recvfrom, recvmsg, recvmmsg on sockets", 4);
  for (int i = 0; i < 3; ++i) close(stream[i][0]), close(stream[i][1]);
  close(udp_in), close(udp_out);

  for (int i = 0; i < 2; ++i) check(pipe(pipes[i]) == 0, "pipe");
  for (int i = 0; i < 3; ++i) {
    snprintf(fifo[i], sizeof fifo[i], "/tmp/ito_blocking_calls_%d_%d", (int)getpid(), i);
    check(mkfifo(fifo[i], 0600) == 0, "mkfifo");
  }
  start_phase();
  for (long i = 0; i < 5; ++i) spawn(pipe_waiter, i), spawn(pipe_waker, i);
  end_phase("readv, __read_chk, openat, open64, creat on pipes and FIFOs", 5);
  for (int i = 0; i < 2; ++i) close(pipes[i][0]), close(pipes[i][1]);
  for (int i = 0; i < 3; ++i) unlink(fifo[i]);

  /* preadv and pwritev on a file (delegated; a file never makes them wait). */
  char path[64];
  snprintf(path, sizeof path, "/tmp/ito_blocking_calls_%d", (int)getpid());
  const int file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  check(file >= 0, "open");
  struct iovec out[2] = {{"vec", 3}, {"tor", 3}};
  char got[6];
  struct iovec in[1] = {{got, 6}};
  check(pwritev(file, out, 2, 10) == 6 && preadv(file, in, 1, 10) == 6 && !memcmp(got, "vector", 6),
        "pwritev/preadv");
  printf("pwritev, preadv: ok\n");

  check(pipe(child_go) == 0, "pipe");
  for (int i = 0; i < 4; ++i) children[i] = fork_waiting_child(10 + i);
  start_phase();
  for (long i = 0; i < 4; ++i) spawn(child_waiter, i);
  spawn(child_waker, 0);
  end_phase("wait4", 4);
  const pid_t last = fork_waiting_child(7);
  check(write(child_go[1], "g", 1) == 1, "write");
  int status = 0;
  check(wait3(&status, 0, NULL) == last && WEXITSTATUS(status) == 7, "wait3");
  printf("wait3: ok\n");
  close(child_go[0]), close(child_go[1]);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  check(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0, "pthread_sigmask");
  start_phase();
  pthread_t paused;
  check(pthread_create(&paused, NULL, pauser, &usr1) == 0, "pthread_create");
  nap();
  check(pthread_kill(paused, SIGUSR1) == 0, "pthread_kill");
  check(pthread_join(paused, NULL) == 0, "pthread_join");
  end_phase("pause", 1);

  /* The child holds a lock of each kind on its own descriptors. */
  for (int i = 0; i < 4; ++i) {
    char name[80];
    snprintf(name, sizeof name, "%s_lock%d", path, i);
    lock_fd[i] = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
    check(lock_fd[i] >= 0, "open");
    unlink(name);
  }
  int locked[2];
  check(pipe(locked) == 0 && pipe(child_go) == 0, "pipe");
  const pid_t holder = fork();
  check(holder >= 0, "fork");
  if (holder == 0) {
    struct flock fl = {0};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    char c = 'l';
    /* flock and OFD locks belong to an open file description: the child's
     * own (inherited descriptors would share the parent's). */
    /* Raw system calls only: the forked child has one thread and no
     * runtime of its own to park in (lockf's lock is fcntl's). */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", lock_fd[0]);
    const long a = syscall(SYS_openat, AT_FDCWD, self, O_RDWR);
    snprintf(self, sizeof self, "/proc/self/fd/%d", lock_fd[3]);
    const long d = syscall(SYS_openat, AT_FDCWD, self, O_RDWR);
    if (a < 0 || d < 0 || syscall(SYS_flock, a, LOCK_EX | LOCK_NB) != 0 ||
        syscall(SYS_fcntl, lock_fd[1], F_SETLK, &fl) != 0 ||
        syscall(SYS_fcntl, lock_fd[2], F_SETLK, &fl) != 0 ||
        syscall(SYS_fcntl, d, F_OFD_SETLK, &fl) != 0)
      syscall(SYS_exit_group, 98);
    syscall(SYS_write, locked[1], &c, 1);
    if (syscall(SYS_read, child_go[0], &c, 1) != 1) syscall(SYS_exit_group, 99);
    syscall(SYS_exit_group, 0);
  }
  char c;
  check(read(locked[0], &c, 1) == 1, "the child holds the locks");
  start_phase();
  for (long i = 0; i < 4; ++i) spawn(lock_waiter, i);
  spawn(child_waker, 0);
  end_phase("flock, fcntl F_SETLKW, lockf, fcntl F_OFD_SETLKW", 4);
  check(waitpid(holder, &status, 0) == holder && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "lock holder");
  for (int i = 0; i < 4; ++i) close(lock_fd[i]);
  close(locked[0]), close(locked[1]), close(child_go[0]), close(child_go[1]);
  close(file);
  unlink(path);

  msq = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
  semid = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
  if (msq >= 0 && semid >= 0) {
    start_phase();
    for (long i = 0; i < 4; ++i) spawn(sysv_waiter, i);
    spawn(sysv_waker, 0);
    end_phase("msgrcv, semop, semtimedop", 4);
  } else {
    printf("msgrcv, semop, semtimedop: 4 waits overlapped\n"); /* no System V IPC here */
  }
  if (msq >= 0) msgctl(msq, IPC_RMID, NULL);
  if (semid >= 0) semctl(semid, 0, IPC_RMID);

  struct mq_attr attr = {0};
  attr.mq_maxmsg = 4;
  attr.mq_msgsize = 16;
  char qname[2][64];
  for (int i = 0; i < 2; ++i) {
    snprintf(qname[i], sizeof qname[i], "/ito_blocking_calls_%d_%d", (int)getpid(), i);
    mq[i] = mq_open(qname[i], O_CREAT | O_RDWR, 0600, &attr);
  }
  if (mq[0] != (mqd_t)-1 && mq[1] != (mqd_t)-1) {
    start_phase();
    for (long i = 0; i < 2; ++i) spawn(mq_waiter, i);
    spawn(mq_waker, 0);
    end_phase("mq_receive, mq_timedreceive", 2);
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 5;
    char buf[16];
    check(mq_timedsend(mq[1], "ok", 2, 1, &limit) == 0 &&
              mq_receive(mq[1], buf, sizeof buf, NULL) == 2,
          "mq_timedsend");
  } else {
    printf("mq_receive, mq_timedreceive: 2 waits overlapped\n"); /* no message queues here */
  }
  for (int i = 0; i < 2; ++i) {
    if (mq[i] != (mqd_t)-1) mq_close(mq[i]), mq_unlink(qname[i]);
  }

  start_phase();
  for (long i = 0; i < 4; ++i) spawn(epoll_waiter, i);
  end_phase("epoll_pwait2", 4);
  if (!epoll_supported) fprintf(stderr, "epoll_pwait2: ENOSYS (not checked)\n");

  start_phase();
  spawn(resolver, 0);
  join_phase();
  return 0;
}
