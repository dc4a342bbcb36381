/*
 * A WASI guest run in an environment (WIRE.md Q18): prints its environment variables, reads the
 * bind mount at /data, counts its runs in the volume at /vol, and checks that the tmpfs at
 * /scratch starts empty. Each line says what a call returned, so the run log is the evidence.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

static void list(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    printf("list %s: errno=%d\n", dir, errno);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      printf("list %s: %s\n", dir, e->d_name);
    }
  }
  closedir(d);
}

int main(void) {
  for (char **e = environ; *e; e++) {
    printf("env %s\n", *e);
  }

  char buf[256] = {0};
  FILE *f = fopen("/data/in.txt", "r");
  if (f && fgets(buf, sizeof buf, f)) {
    printf("bind read: %s", buf);
    fclose(f);
  } else {
    printf("bind read: errno=%d\n", errno);
  }
  f = fopen("/data/out.txt", "w");
  printf("bind write: errno=%d\n", f ? 0 : errno);
  if (f) {
    fclose(f);
  }

  long n = 0;
  f = fopen("/vol/count.txt", "r");
  if (f) {
    if (fscanf(f, "%ld", &n) != 1) {
      n = 0;
    }
    fclose(f);
  }
  n++;
  f = fopen("/vol/count.txt", "w");
  if (!f) {
    printf("volume write: errno=%d\n", errno);
    return 2;
  }
  fprintf(f, "%ld\n", n);
  fclose(f);
  printf("volume count=%ld\n", n);

  struct stat st;
  printf("tmpfs marker before=%s\n", stat("/scratch/marker", &st) == 0 ? "yes" : "no");
  f = fopen("/scratch/marker", "w");
  if (!f) {
    printf("tmpfs write: errno=%d\n", errno);
    return 3;
  }
  fputs("made in this run\n", f);
  fclose(f);
  printf("tmpfs marker after=%s\n", stat("/scratch/marker", &st) == 0 ? "yes" : "no");
  printf("rename across mounts: errno=%d\n",
         rename("/scratch/marker", "/vol/marker") == 0 ? 0 : errno);
  printf("storage root: errno=%d\n", stat("/notes", &st) == 0 ? 0 : errno);
  list("/vol");
  printf("done\n");
  return 0;
}
