#define _POSIX_C_SOURCE 200809L
#include "util_scratch.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fg_cli_scratch_entry {
  char *name;
  ino_t ino;
};

static char *join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  char *p = malloc(a + b + 2);
  if (p) {
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
  }
  return p;
}

static bool regular(const char *dir, const char *name, ino_t *ino) {
  char *p = join(dir, name);
  struct stat st;
  bool ok = p && lstat(p, &st) == 0 && S_ISREG(st.st_mode);
  if (ok) *ino = st.st_ino;
  free(p);
  return ok;
}

fg_status fg_cli_scratch_begin(fg_cli_scratch *s, const char *dir) {
  memset(s, 0, sizeof *s);
  if (mkdir(dir, 0755) == 0) {
    s->made = true;
  } else if (errno != EEXIST) {
    return fg_fail(FG_ERR_IO, "%s: mkdir: %s", dir, strerror(errno));
  }
  if (!(s->dir = strdup(dir))) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", dir);
  DIR *d = opendir(dir);
  if (!d) {
    fg_status st = fg_fail(FG_ERR_IO, "%s: %s", dir, strerror(errno));
    fg_cli_scratch_free(s);
    return st;
  }
  size_t cap = 0;
  struct dirent *e;
  fg_status st = FG_OK;
  while (!st && (e = readdir(d))) {
    ino_t ino;
    if (!regular(dir, e->d_name, &ino)) continue;
    if (s->n == cap) {
      size_t nc = cap ? 2 * cap : 16;
      fg_cli_scratch_entry *b = realloc(s->before, nc * sizeof *b);
      if (!b) {
        st = fg_fail(FG_ERR_NOMEM, "%s: out of memory", dir);
        break;
      }
      s->before = b;
      cap = nc;
    }
    if (!(s->before[s->n].name = strdup(e->d_name))) {
      st = fg_fail(FG_ERR_NOMEM, "%s: out of memory", dir);
      break;
    }
    s->before[s->n++].ino = ino;
  }
  closedir(d);
  if (st) fg_cli_scratch_free(s);
  return st;
}

static bool was_there(const fg_cli_scratch *s, const char *name, ino_t ino) {
  for (size_t i = 0; i < s->n; i++)
    if (s->before[i].ino == ino && strcmp(s->before[i].name, name) == 0) return true;
  return false;
}

void fg_cli_scratch_undo(const fg_cli_scratch *s, fg_cli_scratch_mine_fn mine) {
  if (!s->dir) return;
  DIR *d = opendir(s->dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      ino_t ino;
      if (!mine(e->d_name) || !regular(s->dir, e->d_name, &ino) || was_there(s, e->d_name, ino)) continue;
      char *p = join(s->dir, e->d_name);
      if (p) unlink(p);
      free(p);
    }
    closedir(d);
  }
  if (s->made) rmdir(s->dir); /* fails, and keeps it, when anything else is inside */
}

void fg_cli_scratch_free(fg_cli_scratch *s) {
  for (size_t i = 0; i < s->n; i++) free(s->before[i].name);
  free(s->before);
  free(s->dir);
  memset(s, 0, sizeof *s);
}
