/* libFuzzer target for split GGUF sets opened by path: the input is cut at FUZZ_SEP into
 * 1-4 parts written as m-0000k-of-0000N.gguf, then fg_ckpt_open opens part 1 (the whole
 * set) and part 2 alone (always refused: a lone part is never the model). An opened set is
 * walked, and must be what its parts say: as many tensors as the parts hold together, and
 * every split key a part carries agreeing with its place in the set.
 *
 *   python3 fuzz/gen_file_seeds.py split SEEDS && ./fuzz_gguf_split -max_total_time=30 CORPUS SEEDS */
#include "fuzz_files.h"

#include "forgia/gguf.h"

#define MAX_PARTS 4

static void remove_all(void) {
  char name[64];
  for (unsigned n = 1; n <= MAX_PARTS; n++)
    for (unsigned k = 1; k <= n; k++) {
      snprintf(name, sizeof name, "m-%05u-of-%05u.gguf", k, n);
      fuzz_remove(name);
    }
}

/* The split key `key` of one part when present as a UINT16, else -1. */
static int64_t key_u16(const fg_gguf_file *f, const char *key) {
  int64_t i = fg_gguf_key_index(f, key);
  if (i < 0 || fg_gguf_kv_type(f, (uint64_t)i) != FG_GGUF_UINT16) return -1;
  int64_t v;
  return fg_gguf_kv_int(f, (uint64_t)i, &v) == FG_OK ? v : -1;
}

/* A set that opened: each part parses on its own, its split keys match its place, and
 * the tensor count is the parts' total. */
static void check_set(const fg_ckpt *c, const fuzz_piece *p, size_t n) {
  if (fg_ckpt_file_count(c) != n) abort();
  uint64_t total = 0;
  for (size_t k = 0; k < n; k++) {
    fg_gguf_file *f = NULL;
    if (fg_gguf_open_bytes(p[k].len ? p[k].data : NULL, p[k].len, &f) != FG_OK) abort();
    total += fg_gguf_tensor_count(f);
    int64_t no = key_u16(f, "split.no"), count = key_u16(f, "split.count");
    if ((no >= 0 && no != (int64_t)k) || (count >= 0 && count != (int64_t)n)) abort();
    fg_gguf_close(f);
  }
  if (fg_ckpt_count(c) != total) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_piece p[MAX_PARTS];
  size_t n = fuzz_pieces(data, size, p, MAX_PARTS);
  remove_all();
  char name[64], path[512];
  for (size_t k = 0; k < n; k++) {
    snprintf(name, sizeof name, "m-%05zu-of-%05zu.gguf", k + 1, n);
    fuzz_write(name, &p[k]);
  }
  fg_ckpt *c = NULL;
  snprintf(name, sizeof name, "m-00001-of-%05zu.gguf", n);
  fuzz_path(path, sizeof path, name);
  if (fg_ckpt_open(path, &c) == FG_OK) {
    fuzz_walk(c);
    check_set(c, p, n);
    fg_ckpt_close(c);
  } else if (c) {
    abort(); /* a failed open leaves nothing behind */
  }
  if (n > 1) {
    snprintf(name, sizeof name, "m-00002-of-%05zu.gguf", n);
    fuzz_path(path, sizeof path, name);
    if (fg_ckpt_open(path, &c) == FG_OK) abort(); /* part 2 alone is never a model */
  }
  return 0;
}
