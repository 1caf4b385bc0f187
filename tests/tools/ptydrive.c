/*
 * ptydrive.c — run a command on a pseudo-terminal and script a conversation
 * with it: the test suite's way to drive the tycho REPL as a user would
 * (readline, echo, Ctrl-C as the terminal's interrupt character).
 *
 *   usage: ptydrive [-t SECONDS] [-c COLUMNS] -- command [args...]
 *
 * The steps come from standard input, one per line:
 *   send TEXT     write TEXT to the terminal
 *   line TEXT     write TEXT and a carriage return (the Enter key)
 *   expect TEXT   wait until the output after the previous match contains TEXT
 *   sleep MS      wait MS milliseconds, reading output meanwhile
 *   # ...         a comment; blank lines are skipped
 * TEXT is the rest of the line after one space and takes C escapes: \n \r
 * \t \e \\ \xHH (\x03 is Ctrl-C, \x04 Ctrl-D, \t is TAB).
 *
 * Steps wait on output rather than on time, so a slow machine (a sanitizer
 * build) only makes a run slower; the timeout (default 30 s per step and for
 * the final exit) is a safety net, not a measurement. After the last step
 * ptydrive waits for the command to exit, prints every byte read from the
 * terminal on standard output and exits with the command's status (128+N
 * when signal N killed it). When an expect fails it prints what it read,
 * says why on stderr, kills the command and exits 124 (timeout) or 125 (the
 * command closed the terminal first).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static int master = -1;
static pid_t child = -1;
static char *out;         /* everything read from the terminal */
static size_t out_len, out_cap;
static size_t mark;       /* output before this offset was matched already */
static bool closed;       /* the terminal gave EOF/EIO: no more output */
static int timeout_s = 30;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void append(const char *buf, size_t n) {
  if (out_len + n + 1 > out_cap) {
    size_t cap = out_cap ? out_cap : 4096;
    while (cap < out_len + n + 1) cap *= 2;
    char *p = realloc(out, cap);
    if (!p) {
      perror("ptydrive: realloc");
      exit(2);
    }
    out = p;
    out_cap = cap;
  }
  memcpy(out + out_len, buf, n);
  out_len += n;
  out[out_len] = '\0';
}

/* Read what the terminal has, waiting at most wait_ms for the first byte. */
static void pump(int wait_ms) {
  if (closed) {
    if (wait_ms > 0) poll(NULL, 0, wait_ms);
    return;
  }
  struct pollfd p = {.fd = master, .events = POLLIN};
  int r = poll(&p, 1, wait_ms);
  if (r <= 0) return;
  char buf[4096];
  for (;;) {
    ssize_t n = read(master, buf, sizeof buf);
    if (n > 0) {
      append(buf, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    closed = true; /* 0 or EIO: every slave descriptor is closed */
    return;
  }
}

static void dump_output(void) {
  if (out_len) fwrite(out, 1, out_len, stdout);
  fflush(stdout);
}

static void give_up(int code, const char *why, const char *text) {
  dump_output();
  fprintf(stderr, "ptydrive: %s \"%s\"\n", why, text);
  if (child > 0) {
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
  }
  exit(code);
}

/* C escapes into bytes, in place; returns the length. */
static size_t unescape(char *s) {
  char *w = s;
  for (char *r = s; *r; r++) {
    if (*r != '\\' || r[1] == '\0') {
      *w++ = *r;
      continue;
    }
    r++;
    switch (*r) {
      case 'n': *w++ = '\n'; break;
      case 'r': *w++ = '\r'; break;
      case 't': *w++ = '\t'; break;
      case 'e': *w++ = '\033'; break;
      case 'x': {
        char hex[3] = {0};
        int k = 0;
        while (k < 2 && r[1] && strchr("0123456789abcdefABCDEF", r[1])) hex[k++] = *++r;
        *w++ = (char)strtol(hex, NULL, 16);
        break;
      }
      default: *w++ = *r; break;
    }
  }
  *w = '\0';
  return (size_t)(w - s);
}

static void send_bytes(const char *s, size_t n) {
  while (n > 0) {
    ssize_t k = write(master, s, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pump(10); /* the command is not reading: drain its output meanwhile */
        continue;
      }
      give_up(125, "cannot write to the terminal while sending", s);
    }
    s += k;
    n -= (size_t)k;
  }
}

static void expect(const char *text, size_t n, const char *shown) {
  long long deadline = now_ms() + (long long)timeout_s * 1000;
  for (;;) {
    if (out_len >= mark + n) {
      char *hit = memmem(out + mark, out_len - mark, text, n);
      if (hit) {
        mark = (size_t)(hit - out) + n;
        return;
      }
    }
    if (closed) give_up(125, "the command closed the terminal before printing", shown);
    long long left = deadline - now_ms();
    if (left <= 0) give_up(124, "timed out waiting for", shown);
    pump((int)(left < 100 ? left : 100));
  }
}

static pid_t spawn(char **argv, int cols) {
  master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
    perror("ptydrive: posix_openpt");
    exit(2);
  }
  char *slave_name = ptsname(master);
  if (!slave_name) {
    perror("ptydrive: ptsname");
    exit(2);
  }
  struct winsize ws = {.ws_row = 50, .ws_col = (unsigned short)cols};
  ioctl(master, TIOCSWINSZ, &ws);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    perror("ptydrive: fork");
    exit(2);
  }
  if (pid == 0) {
    setsid(); /* a new session whose controlling terminal is the slave */
    int slave = open(slave_name, O_RDWR);
    if (slave < 0) _exit(127);
    ioctl(slave, TIOCSCTTY, 0);
    dup2(slave, 0);
    dup2(slave, 1);
    dup2(slave, 2);
    if (slave > 2) close(slave);
    close(master);
    execvp(argv[0], argv);
    fprintf(stderr, "ptydrive: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
  return pid;
}

static void usage(void) {
  fprintf(stderr, "usage: ptydrive [-t SECONDS] [-c COLUMNS] -- command [args...]\n"
                  "steps on stdin: send TEXT | line TEXT | expect TEXT | sleep MS | # comment\n");
  exit(2);
}

int main(int argc, char **argv) {
  int cols = 200; /* wide: readline does not wrap the test's lines */
  int i = 1;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) {
      i++;
      break;
    }
    if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
      timeout_s = atoi(argv[++i]);
    else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
      cols = atoi(argv[++i]);
    else
      usage();
  }
  if (i >= argc || timeout_s <= 0 || cols <= 0) usage();

  /* the whole script first: standard input is ours, the terminal the command's */
  char **steps = NULL;
  size_t nsteps = 0, cap = 0;
  char *line = NULL;
  size_t linecap = 0;
  ssize_t len;
  while ((len = getline(&line, &linecap, stdin)) >= 0) {
    if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
    if (nsteps == cap) {
      cap = cap ? cap * 2 : 32;
      steps = realloc(steps, cap * sizeof *steps);
      if (!steps) exit(2);
    }
    steps[nsteps++] = strdup(line);
  }
  free(line);

  signal(SIGPIPE, SIG_IGN);
  child = spawn(argv + i, cols);

  for (size_t k = 0; k < nsteps; k++) {
    char *s = steps[k];
    if (s[0] == '\0' || s[0] == '#') continue;
    char *sp = strchr(s, ' ');
    char *text = sp ? sp + 1 : s + strlen(s);
    size_t cmdlen = sp ? (size_t)(sp - s) : strlen(s);
    char *shown = strdup(text);
    size_t n = unescape(text);
    if (cmdlen == 4 && strncmp(s, "send", 4) == 0) {
      send_bytes(text, n);
    } else if (cmdlen == 4 && strncmp(s, "line", 4) == 0) {
      send_bytes(text, n);
      send_bytes("\r", 1);
    } else if (cmdlen == 6 && strncmp(s, "expect", 6) == 0) {
      expect(text, n, shown);
    } else if (cmdlen == 5 && strncmp(s, "sleep", 5) == 0) {
      long long until = now_ms() + atoi(text);
      for (long long left; (left = until - now_ms()) > 0;) pump((int)left);
    } else {
      fprintf(stderr, "ptydrive: unknown step '%s'\n", s);
      give_up(2, "bad script at", s);
    }
    free(shown);
    pump(0);
  }

  /* wait for the command to finish, reading its last words */
  long long deadline = now_ms() + (long long)timeout_s * 1000;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(child, &status, WNOHANG);
    if (r == child) break;
    if (now_ms() >= deadline) give_up(124, "timed out waiting for the command to exit:", argv[i]);
    pump(50);
  }
  child = -1;
  while (!closed) {
    size_t before = out_len;
    pump(0);
    if (out_len == before) break;
  }
  dump_output();
  for (size_t k = 0; k < nsteps; k++) free(steps[k]);
  free(steps);
  free(out);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 2;
}
