/*
 * A WASI guest that tries to write bytes its grant keeps read-only, or to fill the node's disk; it
 * prints what each call returned. Built once per scenario (-DSCENARIO_...).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wasi/api.h>

__attribute__((import_module("sandbox"), import_name("storage_write"))) int sb_storage_write(
    const char *path, int path_len, long long offset, const void *data, int data_len);
__attribute__((import_module("sandbox"), import_name("kv_put"))) int sb_kv_put(
    const void *key, int key_len, const void *val, int val_len);

static int raw_open(int dir, const char *path, __wasi_rights_t rights, __wasi_oflags_t oflags,
                    __wasi_fd_t *fd) {
  return __wasi_path_open(dir, 0, path, oflags, rights, rights, 0, fd);
}

static void try_write(const char *what, const char *path) {
  errno = 0;
  int fd = open(path, O_WRONLY);
  if (fd < 0) {
    printf("%s: open errno=%d\n", what, errno);
    return;
  }
  ssize_t n = write(fd, "PWNED", 5);
  printf("%s: wrote=%zd errno=%d\n", what, n, errno);
  close(fd);
}

#ifdef SCENARIO_ATTACK
int main(void) {
  __wasi_fd_t fd;
  printf("link: wasi=%d\n", __wasi_path_link(3, 0, "ro/secret", 3, "rw/hl"));
  try_write("write-hl", "rw/hl");
  try_write("write-prelink", "rw/prelink");
  errno = 0;
  printf("read-prelink: %s errno=%d\n", fopen("rw/prelink", "r") ? "OPENED" : "refused", errno);
  try_write("write-presymlink", "rw/presymlink");
  printf("trailing-slash: wasi=%d\n",
         raw_open(3, "ro/secret/", __WASI_RIGHTS_FD_READ, 0, &fd));
  printf("trailing-slash-dot: wasi=%d\n",
         raw_open(3, "ro/secret/.", __WASI_RIGHTS_FD_READ, 0, &fd));
  errno = 0;
  printf("rename-file: %d errno=%d\n", rename("ro/secret", "rw/moved"), errno);
  errno = 0;
  printf("rename-dir: %d errno=%d\n", rename("ro", "rw/ro2"), errno);
  errno = 0;
  printf("rename-over: %d errno=%d\n", rename("rw/mine", "ro/secret"), errno);
  errno = 0;
  printf("symlink: %d errno=%d\n", symlink("../ro/secret", "rw/sl"), errno);
  __wasi_fd_t dir;
  int e = raw_open(3, "rw", __WASI_RIGHTS_FD_READ | __WASI_RIGHTS_PATH_OPEN,
                   __WASI_OFLAGS_DIRECTORY, &dir);
  printf("subdir: wasi=%d\n", e);
  if (e == 0) {
    printf("subdir-dotdot: wasi=%d\n",
           raw_open(dir, "../ro/secret", __WASI_RIGHTS_FD_WRITE, 0, &fd));
    printf("subdir-link: wasi=%d\n", __wasi_path_link(dir, 0, "mine", 3, "ro/hl2"));
  }
  return 0;
}
#endif

#ifdef SCENARIO_REPLAY
int main(void) {
  int counter = -1;
  FILE *f = fopen("data/counter", "r");
  if (f) {
    fscanf(f, "%d", &counter);
    fclose(f);
  }
  printf("counter read: %d\n", counter);
  f = fopen("data/counter", "w");
  fprintf(f, "%d\n", counter + 1);
  fclose(f);
  f = fopen("data/log", "a");
  fprintf(f, "run saw %d\n", counter);
  fclose(f);
  struct stat st;
  stat("data/log", &st);
  printf("log size: %lld\n", (long long)st.st_size);
  errno = 0;
  printf("unlink gone: %d errno=%d\n", unlink("data/gone"), errno);
  DIR *d = opendir("data");
  struct dirent *ent;
  while (d && (ent = readdir(d)) != NULL) {
    if (ent->d_name[0] != '.') {
      printf("entry: %s\n", ent->d_name);
    }
  }
  if (d) {
    closedir(d);
  }
  return 0;
}
#endif

#ifdef SCENARIO_SPARSE
int main(void) {
  mkdir("data", 0755);
  __wasi_fd_t fd;
  int e = raw_open(3, "data/big", __WASI_RIGHTS_FD_WRITE | __WASI_RIGHTS_FD_SEEK,
                   __WASI_OFLAGS_CREAT, &fd);
  printf("open: wasi=%d\n", e);
  __wasi_size_t n = 0;
  __wasi_ciovec_t iov = {(const uint8_t *)"x", 1};
  printf("pwrite: wasi=%d\n", __wasi_fd_pwrite(fd, &iov, 1, 1ULL << 40, &n));
  __wasi_filesize_t pos;
  (void)__wasi_fd_seek(fd, 1LL << 40, __WASI_WHENCE_SET, &pos);
  printf("seek-write: wasi=%d\n", __wasi_fd_write(fd, &iov, 1, &n));
  printf("set-size: wasi=%d\n", __wasi_fd_filestat_set_size(fd, 1ULL << 40));
  printf("allocate: wasi=%d\n", __wasi_fd_allocate(fd, 1ULL << 40, 1));
  printf("storage_write: %d\n", sb_storage_write("data/big2", 9, 1LL << 40, "x", 1));
  return 0;
}
#endif

#ifdef SCENARIO_QUOTA
static char mib[1 << 20];

int main(void) {
  memset(mib, 'q', sizeof mib);
  // At the disk's reserve the directory itself may be refused (an entry costs 4 KiB): then that is
  // why no file can be opened in it.
  errno = 0;
  int dir_errno = mkdir("data", 0755) == 0 || errno == EEXIST ? 0 : errno;
  int i;
  int s = 0;
  for (i = 0; i < 200; i++) {
    char key[16];
    int len = snprintf(key, sizeof key, "q/%d", i);
    s = sb_kv_put(key, len, mib, sizeof mib);
    if (s != 0) {
      break;
    }
  }
  printf("kv stopped at %d status=%d\n", i, s);
  int e = 0;
  for (i = 0; i < 200; i++) {
    char path[32];
    snprintf(path, sizeof path, "data/f%d", i);
    FILE *f = fopen(path, "w");
    if (!f) {
      e = dir_errno ? dir_errno : errno;
      break;
    }
    size_t w = fwrite(mib, 1, sizeof mib, f);
    int fe = errno;
    int c = fclose(f);
    if (w != sizeof mib || c != 0) {
      e = fe ? fe : errno;
      break;
    }
  }
  printf("storage stopped at %d errno=%d\n", i, e);
  int s2 = 0;
  for (i = 0; i < 200; i++) {
    char path[32];
    int len = snprintf(path, sizeof path, "data/s%d", i);
    s2 = sb_storage_write(path, len, 0, mib, sizeof mib);
    if (s2 != 0) {
      break;
    }
  }
  printf("storage_write stopped at %d status=%d\n", i, s2);
  return 0;
}
#endif
