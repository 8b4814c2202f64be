/* Helpers for the fuzz targets that open checkpoints by path (split sets, sharded
 * folders): the input is cut into pieces at FUZZ_SEP, and each piece becomes one file of a
 * scratch folder made once per process. fuzz/gen_file_seeds.py writes seeds in this
 * layout. */
#ifndef FORGIA_FUZZ_FILES_H
#define FORGIA_FUZZ_FILES_H

#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forgia/ckpt.h"

#define FUZZ_SEP "@@FORGIA-PART@@"
#define FUZZ_SEP_LEN (sizeof FUZZ_SEP - 1)
#define FUZZ_MAX_PIECES 5

typedef struct fuzz_piece {
  const uint8_t *data;
  size_t len;
} fuzz_piece;

/* Cuts data at each separator (at most max pieces: the last takes the rest). */
static size_t fuzz_pieces(const uint8_t *data, size_t size, fuzz_piece *out, size_t max) {
  size_t n = 0, start = 0;
  while (n + 1 < max) {
    const uint8_t *hit = size > start ? memmem(data + start, size - start, FUZZ_SEP, FUZZ_SEP_LEN) : NULL;
    if (!hit) break;
    out[n++] = (fuzz_piece){data + start, (size_t)(hit - data) - start};
    start = (size_t)(hit - data) + FUZZ_SEP_LEN;
  }
  out[n++] = (fuzz_piece){data + start, size - start};
  return n;
}

static char fuzz_dir_path[256];

/* At exit: the scratch folder and what the last input left in it (files only). */
static void fuzz_dir_remove(void) {
  DIR *d = opendir(fuzz_dir_path);
  struct dirent *e;
  char path[512];
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
    snprintf(path, sizeof path, "%s/%s", fuzz_dir_path, e->d_name);
    unlink(path);
  }
  if (d) closedir(d);
  rmdir(fuzz_dir_path);
}

/* The scratch folder of this process, made on first use. */
static const char *fuzz_dir(void) {
  if (!fuzz_dir_path[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/forgia-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fuzz_dir_path)) abort();
    atexit(fuzz_dir_remove);
  }
  return fuzz_dir_path;
}

static void fuzz_path(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", fuzz_dir(), name); }

static void fuzz_write(const char *name, const fuzz_piece *p) {
  char path[512];
  fuzz_path(path, sizeof path, name);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (p->len && fwrite(p->data, 1, p->len, f) != p->len) abort();
  if (fclose(f) != 0) abort();
}

static void fuzz_remove(const char *name) {
  char path[512];
  fuzz_path(path, sizeof path, name);
  unlink(path);
}

static volatile uint64_t fuzz_sink;

/* Every tensor of an opened checkpoint: found by its own name, its bytes inside its file's
 * mapping, its first and last byte read. */
static void fuzz_walk(const fg_ckpt *c) {
  uint64_t acc = 0;
  size_t nfiles = fg_ckpt_file_count(c);
  for (size_t i = 0; i < fg_ckpt_count(c); i++) {
    const fg_ckpt_tensor *t = fg_ckpt_tensor_at(c, i);
    if (!t || fg_ckpt_find_n(c, t->name, t->name_len) != t) abort();
    if (t->file >= nfiles) abort();
    const fg_ckpt_file *f = fg_ckpt_file_at(c, t->file);
    if (t->offset > f->size || t->nbytes > f->size - t->offset) abort();
    if (t->nbytes) {
      if (t->data != f->data + t->offset) abort();
      acc += t->data[0] + t->data[t->nbytes - 1];
    }
    acc += t->numel + (uint64_t)t->ndim;
  }
  for (size_t i = 0; i < nfiles; i++) {
    fg_mapping *m = fg_ckpt_retain_mapping(c, i);
    if (!m) abort();
    fg_mapping_release(m);
  }
  fuzz_sink = acc;
}

#endif
