/* A WASI guest that reads the clocks and asks for randomness, printing what it got. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <wasi/api.h>

int main(int argc, char **argv) {
  struct timespec rt, mono;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  printf("realtime=%lld.%09ld\n", (long long)rt.tv_sec, rt.tv_nsec);
  printf("monotonic=%lld.%09ld\n", (long long)mono.tv_sec, mono.tv_nsec);
  unsigned char b[8];
  errno = 0;
  int r = getentropy(b, sizeof b);
  printf("getentropy=%d errno=%d\n", r, errno);
  printf("random_get=%d\n", __wasi_random_get(b, sizeof b));
  if (argc > 0 && getenv("EXIT_WITH") != NULL) {
    exit(atoi(getenv("EXIT_WITH")));
  }
  return 0;
}
