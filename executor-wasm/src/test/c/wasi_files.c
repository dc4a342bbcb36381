/* A WASI guest that uses its storage the ordinary way: write, read back, mkdir, list, stat. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int list(const char *label, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    printf("opendir %s failed: errno=%d\n", dir, errno);
    return 1;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      printf("%s: %s\n", label, e->d_name);
    }
  }
  closedir(d);
  return 0;
}

int main(int argc, char **argv) {
  const char *greeting = getenv("GREETING");
  printf("argc=%d argv0=%s greeting=%s\n", argc, argv[0], greeting ? greeting : "(none)");

  FILE *f = fopen("notes/hello.txt", "w");
  if (!f) {
    printf("open for write failed: errno=%d\n", errno);
    return 1;
  }
  fputs("written by a wasi guest\n", f);
  fclose(f);

  char buf[128] = {0};
  f = fopen("notes/hello.txt", "r");
  if (!f || !fgets(buf, sizeof buf, f)) {
    printf("read back failed: errno=%d\n", errno);
    return 2;
  }
  fclose(f);
  printf("read back: %s", buf);

  if (mkdir("notes/sub", 0755) != 0) {
    printf("mkdir failed: errno=%d\n", errno);
    return 3;
  }
  if (list("notes", "notes") || list("root", ".")) {
    return 4;
  }

  struct stat st;
  if (stat("notes/hello.txt", &st) != 0) {
    printf("stat failed: errno=%d\n", errno);
    return 5;
  }
  printf("size=%lld mtime=%lld\n", (long long)st.st_size, (long long)st.st_mtim.tv_sec);
  fprintf(stderr, "done\n");
  return 0;
}
