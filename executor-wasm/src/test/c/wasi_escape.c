/* A WASI guest that tries to leave its storage or exceed its grant; it prints what it got. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <wasi/api.h>

static void try_open(const char *what, const char *path, const char *mode) {
  errno = 0;
  FILE *f = fopen(path, mode);
  if (f) {
    char buf[64] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    printf("%s: OPENED read=%zu [%s]\n", what, n, buf);
    fclose(f);
  } else {
    printf("%s: errno=%d\n", what, errno);
  }
}

/* Straight to the host, past any path handling in libc: fd 3 is the preopened root. */
static void try_raw(const char *what, const char *path) {
  __wasi_fd_t fd;
  __wasi_errno_t e = __wasi_path_open(3, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, path, 0,
                                      __WASI_RIGHTS_FD_READ, 0, 0, &fd);
  printf("%s: wasi=%d\n", what, e);
}

int main(void) {
  try_open("dotdot", "../../etc/passwd", "r");
  try_open("absolute", "/etc/passwd", "r");
  try_open("symlink", "notes/escape", "r");
  try_open("symlink-dir", "notes/outdir/secret.txt", "r");
  try_open("write-read-only", "ro.txt", "w");
  try_open("append-read-only", "ro.txt", "a");
  try_open("read-ungranted", "hidden.txt", "r");
  try_raw("raw-dotdot", "../outside/secret.txt");
  try_raw("raw-absolute", "/etc/passwd");
  try_raw("raw-inner-dotdot", "notes/../ro.txt");
  try_raw("raw-symlink", "notes/escape");
  errno = 0;
  printf("unlink-read-only: %d errno=%d\n", unlink("ro.txt"), errno);
  errno = 0;
  printf("unlink-escape-link: %d errno=%d\n", unlink("notes/escape"), errno);
  errno = 0;
  printf("rename-out: %d errno=%d\n", rename("notes/seed.txt", "hidden2.txt"), errno);
  errno = 0;
  printf("symlink-make: %d errno=%d\n", symlink("/etc/passwd", "notes/mine"), errno);
  try_open("granted", "ro.txt", "r");
  return 0;
}
