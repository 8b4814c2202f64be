/* Open + inspect of a >= 2 GB GGUF (with a 128k-token vocabulary, as real models carry) and
 * of a sharded safetensors directory, against gguf-py's GGUFReader and safetensors'
 * safe_open doing the same work in the same run (bench_open_peer.py). Also the RSS growth of
 * the open: it must stay at header size, not model size.
 *   bench_open [--dir DIR] [--python PY] [--reps N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "forgia/gguf.h"
#include "forgia/safetensors.h"
#include "harness.h"

#define N_LAYERS 32
#define VOCAB 128000
#define HIDDEN 2048
#define FFN 5632

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kb = atol(line + 6);
  if (f) fclose(f);
  return kb;
}

static void die(const char *what) {
  fprintf(stderr, "bench_open: %s: %s\n", what, fg_last_error());
  exit(1);
}

typedef struct {
  char name[64];
  uint64_t shape[2];
  int ndim;
} spec;

static int model_specs(spec *s) {
  int n = 0;
  snprintf(s[n].name, 64, "token_embd.weight"), s[n].shape[0] = VOCAB / 4, s[n].shape[1] = HIDDEN, s[n++].ndim = 2;
  for (int l = 0; l < N_LAYERS; l++) {
    const char *mats[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    for (int m = 0; m < 7; m++) {
      snprintf(s[n].name, 64, "blk.%d.%s.weight", l, mats[m]);
      s[n].shape[0] = m >= 4 ? (m == 6 ? HIDDEN : FFN) : HIDDEN;
      s[n].shape[1] = m >= 4 ? (m == 6 ? FFN : HIDDEN) : HIDDEN;
      s[n++].ndim = 2;
    }
    snprintf(s[n].name, 64, "blk.%d.attn_norm.weight", l), s[n].shape[0] = HIDDEN, s[n++].ndim = 1;
    snprintf(s[n].name, 64, "blk.%d.ffn_norm.weight", l), s[n].shape[0] = HIDDEN, s[n++].ndim = 1;
  }
  return n;
}

static void make_gguf(const char *path, const spec *s, int n) {
  fg_gguf_writer *w;
  if (fg_gguf_writer_create(&w)) die("writer");
  fg_gguf_writer_set_str(w, "general.architecture", "llama", 5);
  fg_gguf_writer_set_u32(w, "llama.block_count", N_LAYERS);
  fg_gguf_writer_set_u32(w, "llama.embedding_length", HIDDEN);
  fg_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
  char **tok = malloc(sizeof *tok * VOCAB);
  float *scores = malloc(sizeof *scores * VOCAB);
  int32_t *types = malloc(sizeof *types * VOCAB);
  for (int i = 0; i < VOCAB; i++) {
    tok[i] = malloc(16);
    snprintf(tok[i], 16, "tok%d", i);
    scores[i] = (float)-i;
    types[i] = 1;
  }
  fg_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", (const char *const *)tok, NULL, VOCAB);
  fg_gguf_writer_set_array(w, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, scores, VOCAB);
  fg_gguf_writer_set_array(w, "tokenizer.ggml.token_type", FG_GGUF_INT32, types, VOCAB);
  for (int i = 0; i < n; i++) {
    uint64_t ne[2] = {s[i].ndim == 2 ? s[i].shape[1] : s[i].shape[0], s[i].shape[0]};
    if (fg_gguf_writer_declare_tensor(w, s[i].name, s[i].ndim == 2 ? FG_F16 : FG_F32, (uint32_t)s[i].ndim, ne))
      die("declare");
  }
  if (fg_gguf_writer_begin(w, path)) die("begin");
  size_t chunk = 64 << 20;
  void *zeros = calloc(1, chunk);
  for (int i = 0; i < n; i++) {
    uint64_t bytes = s[i].ndim == 2 ? s[i].shape[0] * s[i].shape[1] * 2 : s[i].shape[0] * 4;
    while (bytes) {
      uint64_t k = bytes < chunk ? bytes : chunk;
      if (fg_gguf_writer_write_data(w, zeros, k)) die("write");
      bytes -= k;
    }
  }
  if (fg_gguf_writer_commit(w)) die("commit");
  fg_gguf_writer_free(w);
  free(zeros);
  for (int i = 0; i < VOCAB; i++) free(tok[i]);
  free(tok), free(scores), free(types);
}

static void make_st_dir(const char *dir, const spec *s, int n) {
  fg_st_write_tensor *t = calloc((size_t)n, sizeof *t);
  size_t biggest = 0;
  for (int i = 0; i < n; i++) {
    t[i].name = s[i].name, t[i].dtype = FG_BF16, t[i].ndim = s[i].ndim, t[i].shape = s[i].shape;
    t[i].nbytes = (s[i].ndim == 2 ? s[i].shape[0] * s[i].shape[1] : s[i].shape[0]) * 2;
    if (t[i].nbytes > biggest) biggest = t[i].nbytes;
  }
  void *zeros = calloc(1, biggest); /* every tensor points at the same zeros */
  for (int i = 0; i < n; i++) t[i].data = zeros;
  fg_st_kv meta = {"format", "pt"};
  if (fg_st_save_sharded(dir, t, (size_t)n, &meta, 1, 512ull << 20, NULL)) die("save_sharded");
  free(zeros);
  free(t);
}

typedef struct {
  const char *path;
  uint64_t sink;
} open_ctx;

static void run_gguf(void *p) {
  open_ctx *c = p;
  fg_gguf_file *f;
  if (fg_gguf_open_auto(c->path, &f)) die("gguf open");
  for (uint64_t i = 0; i < fg_gguf_kv_count(f); i++) {
    fg_gguf_array a;
    if (fg_gguf_kv_type(f, i) == FG_GGUF_ARRAY && fg_gguf_kv_array(f, i, &a) == FG_OK) c->sink += a.len;
    c->sink += fg_gguf_kv_key(f, i).len;
  }
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) c->sink += fg_gguf_tensor_at(f, i)->nbytes;
  fg_gguf_close(f);
}

static void run_st(void *p) {
  open_ctx *c = p;
  fg_st_dir *d;
  if (fg_st_dir_open(c->path, FG_MAP_MMAP, &d)) die("safetensors open");
  for (size_t i = 0; i < fg_st_dir_count(d); i++) c->sink += fg_st_dir_tensor_at(d, i, NULL)->nbytes;
  fg_st_dir_close(d);
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("open", 0, argc, argv);
  const char *dir = "bench-data", *py = ".venv/bin/python3";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
    if (strcmp(argv[i], "--python") == 0) py = argv[i + 1];
  }
  mkdir(dir, 0755);
  static spec s[1 + N_LAYERS * 9];
  int n = model_specs(s);
  char gpath[512], sdir[512];
  snprintf(gpath, sizeof gpath, "%s/open-bench.gguf", dir);
  snprintf(sdir, sizeof sdir, "%s/open-bench-st", dir);
  struct stat st;
  if (stat(gpath, &st) != 0) make_gguf(gpath, s, n);
  if (stat(sdir, &st) != 0) make_st_dir(sdir, s, n);
  stat(gpath, &st);
  fprintf(stderr, "bench_open: %s is %.2f GB, %d tensors, %d-token vocabulary\n", gpath, st.st_size / 1e9, n, VOCAB);

  long rss0 = rss_kb();
  fg_gguf_file *f;
  if (fg_gguf_open_auto(gpath, &f)) die("gguf open");
  long rss1 = rss_kb();
  fg_gguf_close(f);

  open_ctx c = {gpath, 0};
  double tg = fg_bench_time(&b, run_gguf, &c);
  c.path = sdir;
  double ts = fg_bench_time(&b, run_st, &c);

  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s/bench_open_peer.py %s %s %d", py, FORGIA_BENCH_DIR, gpath, sdir, b.reps < 3 ? 3 : b.reps);
  FILE *p = popen(cmd, "r");
  double pg = 0, ps = 0;
  char line[1024] = "";
  if (p && fgets(line, sizeof line, p)) {
    char *a = strstr(line, "\"gguf_py_s\":"), *z = strstr(line, "\"safetensors_s\":");
    if (a) pg = atof(a + 12);
    if (z) ps = atof(z + 16);
  }
  if (p) pclose(p);
  if (pg <= 0 || ps <= 0) fprintf(stderr, "bench_open: peer run failed (%s); ratios omitted\n", cmd);
  fg_bench_report(&b, "gguf_open_inspect_s", tg, "s", "gguf_py_GGUFReader_s", pg);
  fg_bench_report(&b, "safetensors_dir_open_inspect_s", ts, "s", "safetensors_safe_open_s", ps);
  fg_bench_report(&b, "gguf_open_rss_growth_mb", (double)(rss1 - rss0) / 1024.0, "MB", "file_size_mb", st.st_size / 1048576.0);
  return c.sink == 0;
}
