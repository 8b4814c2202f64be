/* libFuzzer target for sharded safetensors folders opened by path: the input is cut at
 * FUZZ_SEP into config.json (not written when empty), an index
 * (model.safetensors.index.json) and 0-3 shards (model-0000k-of-0000N.safetensors). Then
 * fg_ckpt_open opens the folder, the index and shard 1 alone; whatever opens is walked
 * (tensors, lookups, config getters) and must agree: the folder and the index give the
 * same tensors.
 *
 *   python3 fuzz/gen_file_seeds.py st-dir SEEDS && ./fuzz_st_dir -max_total_time=30 CORPUS SEEDS */
#include "fuzz_files.h"

#include <stdbool.h>

#define MAX_SHARDS 3

static void remove_all(void) {
  char name[64];
  for (unsigned n = 1; n <= MAX_SHARDS; n++)
    for (unsigned k = 1; k <= n; k++) {
      snprintf(name, sizeof name, "model-%05u-of-%05u.safetensors", k, n);
      fuzz_remove(name);
    }
  fuzz_remove(FG_ST_INDEX_NAME);
  fuzz_remove("config.json");
}

static void walk_dir(const fg_st_dir *d) {
  int64_t i;
  double f;
  const char *s;
  uint64_t acc = fg_st_dir_total_size(d) + fg_st_dir_count(d);
  if (fg_st_dir_config_int(d, "hidden_size", &i) == FG_OK) acc += (uint64_t)i;
  if (fg_st_dir_config_float(d, "rms_norm_eps", &f) == FG_OK) acc += f != f;
  if (fg_st_dir_config_string(d, "model_type", &s) == FG_OK) acc += (uint8_t)s[0];
  size_t len = 0;
  const char *text = fg_st_dir_index_text(d, &len);
  if (text && len) acc += (uint8_t)text[len - 1];
  for (size_t k = 0; k < fg_st_dir_shard_count(d); k++) acc += strlen(fg_st_dir_shard_name(d, k));
  fuzz_sink = acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_piece p[MAX_SHARDS + 2];
  size_t n = fuzz_pieces(data, size, p, MAX_SHARDS + 2);
  remove_all();
  char name[64], path[512], index[512];
  if (p[0].len) fuzz_write("config.json", &p[0]);
  if (n > 1) fuzz_write(FG_ST_INDEX_NAME, &p[1]);
  size_t shards = n > 2 ? n - 2 : 0;
  for (size_t k = 0; k < shards; k++) {
    snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, shards);
    fuzz_write(name, &p[k + 2]);
  }

  fg_ckpt *by_dir = NULL, *by_index = NULL, *c = NULL;
  fuzz_path(index, sizeof index, FG_ST_INDEX_NAME);
  fg_status sd = fg_ckpt_open(fuzz_dir(), &by_dir);
  fg_status si = fg_ckpt_open(index, &by_index);
  if ((sd != FG_OK && by_dir) || (si != FG_OK && by_index)) abort();
  if (by_dir) {
    fuzz_walk(by_dir);
    walk_dir(fg_ckpt_safetensors(by_dir));
  }
  if (by_index) {
    fuzz_walk(by_index);
    if (by_dir && fg_st_dir_is_sharded(fg_ckpt_safetensors(by_dir))) {
      /* the folder opened through the same index: the same tensors in the same order */
      if (fg_ckpt_count(by_dir) != fg_ckpt_count(by_index)) abort();
      for (size_t i = 0; i < fg_ckpt_count(by_dir); i++) {
        const fg_ckpt_tensor *a = fg_ckpt_tensor_at(by_dir, i), *b = fg_ckpt_tensor_at(by_index, i);
        if (a->name_len != b->name_len || memcmp(a->name, b->name, a->name_len) || a->nbytes != b->nbytes) abort();
      }
    }
  }
  bool claimed = false; /* shard 1 is named by an index that opens */
  if (shards) snprintf(name, sizeof name, "model-00001-of-%05zu.safetensors", shards);
  for (size_t k = 0; by_index && shards && k < fg_st_dir_shard_count(fg_ckpt_safetensors(by_index)); k++)
    claimed |= strcmp(fg_st_dir_shard_name(fg_ckpt_safetensors(by_index), k), name) == 0;
  fg_ckpt_close(by_dir);
  fg_ckpt_close(by_index);
  if (shards) {
    fuzz_path(path, sizeof path, name);
    if (fg_ckpt_open(path, &c) == FG_OK) {
      /* only a shard that no index claims opens alone, as a file of its own */
      if (claimed || fg_ckpt_file_count(c) != 1) abort();
      fuzz_walk(c);
      fg_ckpt_close(c);
    } else if (c) {
      abort();
    }
  }
  return 0;
}
