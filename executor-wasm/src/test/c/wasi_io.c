// A WASI command for the stdio tests; argv[1] picks what it does:
//   echo ARG...  prints each argument on its own line as [arg]
//   cat          copies stdin to stdout until EOF, then prints the byte count on stderr
//   drain        reads stdin until EOF, many times over (a reader that never stops asking)
//   spew N       writes N bytes of 'x' to stdout, and "spewed" to stderr
//   exit N       writes "bye" to stdout and "err" to stderr, then exit(N)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    printf("argc=%d argv0=%s\n", argc, argc > 0 ? argv[0] : "");
    return 0;
  }
  const char *mode = argv[1];
  if (strcmp(mode, "echo") == 0) {
    printf("argc=%d\n", argc);
    for (int i = 0; i < argc; i++) {
      printf("[%s]\n", argv[i]);
    }
    return 0;
  }
  if (strcmp(mode, "cat") == 0) {
    char buf[4096];
    long total = 0;
    ssize_t n;
    while ((n = read(0, buf, sizeof buf)) > 0) {
      fwrite(buf, 1, (size_t)n, stdout);
      total += n;
    }
    fflush(stdout);
    fprintf(stderr, "read %ld bytes\n", total);
    return n < 0 ? 2 : 0;
  }
  if (strcmp(mode, "drain") == 0) {
    char buf[64];
    long total = 0, eofs = 0;
    for (long i = 0; i < 100000; i++) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n < 0) {
        return 2;
      }
      if (n == 0) {
        eofs++;
      }
      total += n;
    }
    printf("total=%ld eofs=%ld\n", total, eofs);
    return 0;
  }
  if (strcmp(mode, "spew") == 0 && argc > 2) {
    long n = atol(argv[2]);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    while (n > 0) {
      size_t k = n < (long)sizeof buf ? (size_t)n : sizeof buf;
      fwrite(buf, 1, k, stdout);
      n -= (long)k;
    }
    fflush(stdout);
    fprintf(stderr, "spewed\n");
    return 0;
  }
  if (strcmp(mode, "exit") == 0 && argc > 2) {
    printf("bye\n");
    fprintf(stderr, "err\n");
    fflush(stdout);
    exit((int)strtoul(argv[2], NULL, 10));
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 64;
}
