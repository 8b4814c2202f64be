/* forgia demo: the main job end to end on a synthetic Llama-shaped model.
 *   1. build ~300 MB of deterministic f32 weights as a sharded safetensors directory,
 *   2. export it to GGUF at f16, q8_0 and q4_K (forgia export's library path),
 *   3. inspect each output (metadata, tensor directory, general.file_type),
 *   4. load each onto the best device (kept dtypes: the I/O path) and once more widened to
 *      f32 to measure the quantization error against the original weights,
 *   5. print one table: format, dtype, file size, RMSE, load GB/s and its ratio to a limit
 *      measured in the same run (page-cache read on the CPU, pinned H2D on a GPU);
 *   6. training (train_demo.h): AdamW trains the two-spirals MLP with a checkpoint at half
 *      way, a fresh process resumes from it and must end memcmp-equal to the uninterrupted
 *      run, the model is exported to safetensors and GGUF, and `forgia inspect` reads both
 *      and the checkpoint directory.
 * --only io|train runs one of the two parts.
 * Exits 1 when any step fails (2 on bad usage or a bad --device, before anything is built);
 * on SIGINT/SIGTERM removes what this run wrote and exits 130/143. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/clock.h"
#include "forgia/export.h"
#include "forgia/forgia.h"
#include "forgia/gguf.h"
#include "forgia/load.h"
#include "forgia/safetensors.h"
#include "train_demo.h"
#include "util_args.h"
#include "util_threads.h"
#include "util_limits.h"
#include "util_progress.h"
#include "util_report.h"
#include "util_scratch.h"
#include "util_signal.h"

const char fg_cmd_demo_summary[] =
    "synthetic Llama -> safetensors -> GGUF f16/q8_0/q4_K -> inspect -> load table; train, resume, export";

#define DEMO_VOCAB 24000
#define DEMO_HIDDEN 768
#define DEMO_FFN 2048
#define DEMO_LAYERS 6
#define DEMO_MAX_TENSORS (3 + DEMO_LAYERS * 9)

typedef struct demo_tensor {
  char name[64];
  int ndim;
  uint64_t shape[2];
  uint64_t numel;
  float *data;
  int matrix; /* counts toward the RMSE */
} demo_tensor;

typedef struct demo_model {
  demo_tensor t[DEMO_MAX_TENSORS];
  int n;
  uint64_t bytes;
} demo_model;

static void usage(FILE *f) {
  fprintf(f, "usage: forgia demo [--dir DIR] [--device cpu|cuda|cuda:N|auto] [--only io|train] [--threads N]\n\n%s\n"
             "Files are written under DIR (default ./forgia-demo) and left there for inspection.\n"
             "The training part (DIR/train) trains the two-spirals MLP of `forgia train spirals` with\n"
             "AdamW for %d steps with a checkpoint at %d, resumes it in a fresh process and checks\n"
             "that the result is byte-identical to the uninterrupted run, exports the model to\n"
             "safetensors and GGUF and inspects both and the checkpoint directory.\n"
             "  --only io|train  run only the I/O part (the table) or only the training part\n"
             "  --threads N      CPU threads (the bytes written do not depend on it)\n",
          fg_cmd_demo_summary, DEMO_TRAIN_STEPS, DEMO_TRAIN_STEPS / 2);
}

/* One line naming the file the step worked on (the library's message usually does). */
static int fail(const char *path) {
  fg_cli_report("demo", path);
  return 1;
}

/* Cancels an export or a load once SIGINT or SIGTERM has come. */
static bool export_going(const fg_export_progress *p, void *user) {
  (void)p;
  (void)user;
  return !fg_cli_signal_caught();
}
static bool load_going(const fg_load_progress *p, void *user) {
  (void)p;
  (void)user;
  return !fg_cli_signal_caught();
}

/* The files the demo writes (and removes again when interrupted). */
static bool demo_file(const char *name) {
  return strncmp(name, "model", 5) == 0 || strcmp(name, "config.json") == 0;
}

/* splitmix64 + Box-Muller: deterministic weights, independent of the thread count. */
static uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void fill(demo_tensor *t, uint64_t seed, float scale, float offset) {
  const long n = (long)t->numel;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i += 2) {
    uint64_t a = mix(seed * 0x100000001B3ull + (uint64_t)i), b = mix(a);
    double u1 = ((double)(a >> 11) + 1.0) * 0x1.0p-53, u2 = (double)(b >> 11) * 0x1.0p-53;
    double r = sqrt(-2.0 * log(u1));
    t->data[i] = offset + scale * (float)(r * cos(6.283185307179586 * u2));
    if (i + 1 < n) t->data[i + 1] = offset + scale * (float)(r * sin(6.283185307179586 * u2));
  }
}

static int add(demo_model *m, const char *name, uint64_t rows, uint64_t cols, float scale, float offset) {
  demo_tensor *t = &m->t[m->n];
  snprintf(t->name, sizeof t->name, "%s", name);
  t->ndim = cols ? 2 : 1;
  t->shape[0] = rows;
  t->shape[1] = cols;
  t->numel = rows * (cols ? cols : 1);
  t->matrix = cols != 0;
  t->data = malloc(t->numel * sizeof(float));
  if (!t->data) return fg_fail(FG_ERR_NOMEM, "cannot allocate %s", name);
  fill(t, (uint64_t)m->n + 1, scale, offset);
  m->bytes += t->numel * 4;
  m->n++;
  return 0;
}

static int build_model(demo_model *m) {
  memset(m, 0, sizeof *m);
  const float w = 0.02f;
  if (add(m, "model.embed_tokens.weight", DEMO_VOCAB, DEMO_HIDDEN, w, 0)) return 1;
  for (int l = 0; l < DEMO_LAYERS; l++) {
    char n[64];
    static const char *const attn[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
    for (int k = 0; k < 4; k++) {
      snprintf(n, sizeof n, "model.layers.%d.self_attn.%s.weight", l, attn[k]);
      if (add(m, n, DEMO_HIDDEN, DEMO_HIDDEN, w, 0)) return 1;
    }
    snprintf(n, sizeof n, "model.layers.%d.mlp.gate_proj.weight", l);
    if (add(m, n, DEMO_FFN, DEMO_HIDDEN, w, 0)) return 1;
    snprintf(n, sizeof n, "model.layers.%d.mlp.up_proj.weight", l);
    if (add(m, n, DEMO_FFN, DEMO_HIDDEN, w, 0)) return 1;
    snprintf(n, sizeof n, "model.layers.%d.mlp.down_proj.weight", l);
    if (add(m, n, DEMO_HIDDEN, DEMO_FFN, w, 0)) return 1;
    snprintf(n, sizeof n, "model.layers.%d.input_layernorm.weight", l);
    if (add(m, n, DEMO_HIDDEN, 0, 0.05f, 1.0f)) return 1;
    snprintf(n, sizeof n, "model.layers.%d.post_attention_layernorm.weight", l);
    if (add(m, n, DEMO_HIDDEN, 0, 0.05f, 1.0f)) return 1;
  }
  if (add(m, "model.norm.weight", DEMO_HIDDEN, 0, 0.05f, 1.0f)) return 1;
  return add(m, "lm_head.weight", DEMO_VOCAB, DEMO_HIDDEN, w, 0);
}

static void free_model(demo_model *m) {
  for (int i = 0; i < m->n; i++) free(m->t[i].data);
}

static int write_config(const char *dir) {
  char path[1100];
  snprintf(path, sizeof path, "%.1024s/config.json", dir);
  FILE *f = fopen(path, "w");
  if (!f) return fg_fail(FG_ERR_IO, "%s: cannot create", path);
  fprintf(f,
          "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
          "  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n  \"num_hidden_layers\": %d,\n"
          "  \"num_attention_heads\": 12,\n  \"num_key_value_heads\": 12,\n  \"vocab_size\": %d,\n"
          "  \"rms_norm_eps\": 1e-05,\n  \"torch_dtype\": \"float32\"\n}\n",
          DEMO_HIDDEN, DEMO_FFN, DEMO_LAYERS, DEMO_VOCAB);
  return fclose(f) == 0 ? 0 : fg_fail(FG_ERR_IO, "%s: write failed", path);
}

static int save_safetensors(const demo_model *m, const char *dir) {
  fg_st_write_tensor w[DEMO_MAX_TENSORS];
  for (int i = 0; i < m->n; i++) {
    w[i] = (fg_st_write_tensor){m->t[i].name, FG_F32, m->t[i].ndim, m->t[i].shape, m->t[i].data, m->t[i].numel * 4};
  }
  fg_st_kv meta = {"format", "pt"};
  size_t shards = 0;
  if (fg_st_save_sharded(dir, w, (size_t)m->n, &meta, 1, 100ull << 20, &shards)) return 1;
  printf("  wrote %s: %d tensors, %zu shards, %.1f MB of f32\n", dir, m->n, shards, m->bytes / 1e6);
  return write_config(dir);
}

static int export_to(const char *src_dir, const char *out, const char *dtype) {
  fg_ckpt *src = NULL;
  fg_export_plan *plan = NULL;
  fg_export_options o = {0};
  int rc = 1;
  double t0 = fg_clock_seconds();
  if (fg_export_target_parse(dtype, &o.dtype) || fg_ckpt_open(src_dir, &src) ||
      fg_export_plan_create(src, &o, &plan) || fg_export_run(plan, out, export_going, NULL))
    goto done;
  uint64_t before, after;
  fg_export_plan_totals(plan, &before, &after);
  printf("  export %-5s -> %s: %zu of %zu tensors transcoded, %.1f -> %.1f MB in %.2f s\n", dtype, out,
         fg_export_plan_changed(plan), fg_export_plan_count(plan), before / 1e6, after / 1e6, fg_clock_seconds() - t0);
  rc = 0;
done:
  fg_export_plan_free(plan);
  fg_ckpt_close(src);
  return rc;
}

static int inspect(const char *path, fg_dtype want, int ntensors) {
  fg_gguf_file *f;
  if (fg_gguf_open_auto(path, &f)) return 1;
  int64_t ft = -1;
  fg_gguf_get_int(f, "general.file_type", &ft);
  uint64_t nq = 0;
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) nq += fg_gguf_tensor_at(f, i)->dtype == want;
  printf("  inspect %s: GGUF v%u, %llu KVs, %llu tensors (%llu %s), general.file_type %lld\n", path,
         fg_gguf_version(f), (unsigned long long)fg_gguf_kv_count(f), (unsigned long long)fg_gguf_tensor_count(f),
         (unsigned long long)nq, fg_dtype_name(want), (long long)ft);
  int ok = fg_gguf_tensor_count(f) == (uint64_t)ntensors && nq > 0;
  fg_gguf_close(f);
  return ok ? 0 : fg_fail(FG_ERR_STATE, "%s: expected %d tensors with some in %s", path, ntensors, fg_dtype_name(want));
}

typedef struct row {
  const char *format, *dtype;
  char path[1024];
  uint64_t file_bytes;
  double rmse, gbs, limit;
} row;

static uint64_t path_bytes(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return (uint64_t)st.st_size;
  fg_st_dir *d;
  uint64_t n = 0;
  if (fg_st_dir_open(path, FG_MAP_MMAP, &d) == FG_OK) {
    for (size_t i = 0; i < fg_st_dir_shard_count(d); i++) {
      char p[1200];
      snprintf(p, sizeof p, "%s/%s", path, fg_st_dir_shard_name(d, i));
      if (stat(p, &st) == 0) n += (uint64_t)st.st_size;
    }
    fg_st_dir_close(d);
  }
  return n;
}

/* Kept-dtype load (best of two, so page-cache state is the same for every row) and the
 * same-run limit; then an f32 load for the RMSE over the matrices. */
static int measure(row *r, fg_device *dev, const demo_model *m) {
  fg_load_options o;
  fg_load_options_init(&o);
  o.progress = load_going;
  double best = 0;
  for (int rep = 0; rep < 2; rep++) {
    fg_model *lm;
    if (fg_model_create(r->path, dev, &o, &lm)) return 1;
    const fg_load_stats *s = fg_model_stats(lm);
    double gbs = s->seconds > 0 ? (double)s->bytes_read / s->seconds / 1e9 : 0;
    if (gbs > best) best = gbs;
    if (rep == 1 && fg_device_kind_of(dev) == FG_DEVICE_CPU) {
      const char *paths[64];
      uint32_t nf = fg_model_file_count(lm) < 64 ? fg_model_file_count(lm) : 64;
      for (uint32_t i = 0; i < nf; i++) paths[i] = fg_model_file_path(lm, i);
      r->limit = fg_cli_read_gbs(paths, nf);
    }
    fg_model_free(lm);
  }
  r->gbs = best;
  if (fg_device_kind_of(dev) != FG_DEVICE_CPU) r->limit = fg_cli_h2d_gbs(dev);

  o.dtype = FG_LOAD_DTYPE_F32;
  fg_model *lm;
  if (fg_model_create(r->path, dev, &o, &lm)) return 1;
  double se = 0;
  uint64_t n = 0;
  float *host = NULL;
  for (int i = 0; i < m->n; i++) {
    const demo_tensor *t = &m->t[i];
    if (!t->matrix) continue;
    const fg_model_tensor *lt = fg_model_find(lm, t->name);
    if (!lt || lt->dtype != FG_F32 || lt->numel != t->numel) {
      fg_model_free(lm);
      free(host);
      return fg_fail(FG_ERR_STATE, "%s: tensor %s missing or not f32 after an f32 load", r->path, t->name);
    }
    float *h = realloc(host, t->numel * 4);
    if (!h) break;
    host = h;
    if (fg_device_copy(dev, host, lt->data, t->numel * 4, FG_COPY_D2H)) {
      fg_model_free(lm);
      free(host);
      return 1;
    }
    for (uint64_t j = 0; j < t->numel; j++) {
      double d = (double)host[j] - (double)t->data[j];
      se += d * d;
    }
    n += t->numel;
  }
  free(host);
  fg_model_free(lm);
  r->rmse = n ? sqrt(se / (double)n) : 0;
  r->file_bytes = path_bytes(r->path);
  return 0;
}

static const char synopsis[] = "forgia demo [--dir DIR] [--device D] [--only io|train] [--threads N]";

/* Removes what this run wrote (interrupted), reports it and gives the exit status. */
static int interrupted(fg_cli_scratch *top, fg_cli_scratch *st, const char *dir) {
  fg_cli_scratch_undo(st, demo_file);
  fg_cli_scratch_undo(top, demo_file);
  return fg_cli_interrupted("demo", dir);
}

int fg_cmd_demo(int argc, char **argv) {
  const char *dir = NULL, *devspec = NULL, *only = NULL, *threads = NULL;
  const fg_cli_opt opts[] = {{"--dir", &dir, NULL}, {"--device", &devspec, NULL}, {"--only", &only, NULL},
                             {"--threads", &threads, NULL}};
  const fg_cli_spec spec = {"demo", synopsis, usage, opts, 4, NULL, NULL, 0, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  if ((rc = fg_cli_threads(&spec, threads, NULL)) != FG_CLI_GO) return rc;
  if (!dir) dir = "forgia-demo";
  if (only && strcmp(only, "io") != 0 && strcmp(only, "train") != 0)
    return fg_cli_usage_error(&spec, "--only", "'%s' is not io or train", only);
  /* the device first: a bad name must not cost building 300 MB */
  fg_device *dev = NULL;
  fg_status ds = fg_device_open(devspec ? devspec : "auto", &dev);
  if (ds == FG_ERR_INVALID_ARG || ds == FG_ERR_NO_DEVICE) {
    char problem[512];
    snprintf(problem, sizeof problem, "%s", fg_last_error());
    return fg_cli_usage_error(&spec, NULL, "%s", problem);
  }
  if (ds) return fail(NULL);
  if (only && strcmp(only, "train") == 0) {
    rc = fg_cli_demo_train(dev, dir);
    fg_device_close(dev);
    return rc;
  }
  fg_cli_signals_catch();
  char st_dir[1024];
  snprintf(st_dir, sizeof st_dir, "%s/safetensors", dir);
  fg_cli_scratch top = {0}, sts = {0};
  demo_model m = {0};
  row rows[4] = {{.format = "safetensors", .dtype = "f32"}};
  rc = 1;
  if (fg_cli_scratch_begin(&top, dir) || fg_cli_scratch_begin(&sts, st_dir)) {
    fail(NULL);
    goto out;
  }
  double t0 = fg_clock_seconds();
  printf("forgia demo: synthetic Llama (vocab %d, hidden %d, ffn %d, %d layers) in %s\n", DEMO_VOCAB, DEMO_HIDDEN,
         DEMO_FFN, DEMO_LAYERS, dir);
  if (build_model(&m) || (!fg_cli_signal_caught() && save_safetensors(&m, st_dir))) {
    if (!fg_cli_signal_caught()) fail(st_dir);
    goto out;
  }
  static const char *const dtypes[] = {"f16", "q8_0", "q4_K"};
  static const fg_dtype dts[] = {FG_F16, FG_Q8_0, FG_Q4_K};
  snprintf(rows[0].path, sizeof rows[0].path, "%s", st_dir);
  for (int k = 0; k < 3 && !fg_cli_signal_caught(); k++) {
    row *r = &rows[k + 1];
    r->format = "gguf";
    r->dtype = dtypes[k];
    snprintf(r->path, sizeof r->path, "%s/model-%s.gguf", dir, dtypes[k]);
    if (export_to(st_dir, r->path, dtypes[k]) || inspect(r->path, dts[k], m.n)) {
      if (!fg_cli_signal_caught()) fail(r->path);
      goto out;
    }
  }
  const char *limit_name = fg_device_kind_of(dev) == FG_DEVICE_CPU ? "page-cache read" : "pinned H2D";
  for (int k = 0; k < 4 && !fg_cli_signal_caught(); k++) {
    if (measure(&rows[k], dev, &m)) {
      if (!fg_cli_signal_caught()) fail(rows[k].path);
      goto out;
    }
  }
  if (fg_cli_signal_caught()) goto out;
  printf("\n%-12s %-6s %10s %12s %10s %12s %7s   (device %s; limit: %s, same run)\n", "format", "dtype", "file MB",
         "RMSE", "load GB/s", "limit GB/s", "ratio", fg_device_spec(dev), limit_name);
  for (int k = 0; k < 4; k++) {
    const row *r = &rows[k];
    printf("%-12s %-6s %10.1f %12.3e %10.2f %12.2f %7.2f\n", r->format, r->dtype, r->file_bytes / 1e6, r->rmse, r->gbs,
           r->limit, r->limit > 0 ? r->gbs / r->limit : 0.0);
  }
  if (!only && (fg_cli_signal_caught() || fg_cli_demo_train(dev, dir))) goto out;
  printf("\nforgia demo: done in %.1f s, peak RSS %.0f MB\n", fg_clock_seconds() - t0, fg_cli_peak_rss() / 1e6);
  rc = 0;
out:
  if (rc && fg_cli_signal_caught()) rc = interrupted(&top, &sts, dir);
  fg_cli_scratch_free(&sts);
  fg_cli_scratch_free(&top);
  fg_device_close(dev);
  free_model(&m);
  return rc;
}
