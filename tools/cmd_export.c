/* forgia export: re-emit a GGUF model or a safetensors checkpoint as one GGUF file,
 * optionally transcoding matrix weights (policy in include/forgia/export.h). */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/export.h"
#include "util_ckpt.h"
#include "util_progress.h"

const char fg_cmd_export_summary[] = "write a GGUF model (or safetensors checkpoint) as GGUF, transcoding matrix weights";

static void usage(FILE *f) {
  fprintf(f,
          "usage: forgia export (--from-gguf IN | --from-safetensors FILE|DIR) --out OUT\n"
          "                     [--dtype MODE] [--experts-dtype MODE] [--dry-run] [--chunk-mib N]\n\n"
          "MODE: verbatim (default) | f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K\n"
          "      q6_K tq1_0 tq2_0 iq4_nl iq4_xs mxfp4 nvfp4 q1_0 q2_0 (names are case-insensitive)\n"
          "  --dtype          target of matrix weights (2+ dims, name ending .weight, no 'norm');\n"
          "                   other tensors, and rows that are not whole blocks, keep their type.\n"
          "                   A quantized source refuses a quantized target (no chain requantization).\n"
          "  --experts-dtype  target of *_exps.weight tensors; may requantize a quantized source\n"
          "  --dry-run        print the per-tensor plan and write nothing\n"
          "  --chunk-mib N    f32 working buffer per step (default 64)\n"
          "Metadata is copied byte-verbatim (split.* keys dropped); a --dtype sets general.file_type.\n"
          "safetensors config.json values become safetensors.config.* keys.\n");
}

static volatile sig_atomic_t fg_export_interrupted;
static void on_signal(int sig) {
  (void)sig;
  fg_export_interrupted = 1;
}

typedef struct run_ctx {
  fg_cli_progress bar;
  size_t last_done;
} run_ctx;

static bool on_progress(const fg_export_progress *p, void *user) {
  run_ctx *c = user;
  const char *finished = NULL;
  char detail[96] = "";
  /* The call after a tensor's last chunk comes with tensors_done advanced past it. */
  if (p->tensors_done != c->last_done) {
    c->last_done = p->tensors_done;
    finished = p->tensor->name;
    snprintf(detail, sizeof detail, "%s -> %s", fg_dtype_name(p->tensor->src_dtype),
             fg_dtype_name(p->tensor->dst_dtype));
  }
  fg_cli_progress_update(&c->bar, p->tensors_done, p->bytes_done, finished, detail);
  return !fg_export_interrupted;
}

static void print_shape(char *buf, size_t cap, const fg_export_tensor *t) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < t->ndim && n < cap; d++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, d ? ", " : "", t->shape[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

static void print_plan(const fg_export_plan *p) {
  size_t n = fg_export_plan_count(p), wname = 4, wshape = 5;
  char shape[96];
  for (size_t i = 0; i < n; i++) {
    const fg_export_tensor *t = fg_export_plan_tensor(p, i);
    print_shape(shape, sizeof shape, t);
    if (strlen(t->name) > wname) wname = strlen(t->name);
    if (strlen(shape) > wshape) wshape = strlen(shape);
  }
  printf("%-*s  %-*s  %-18s  %12s -> %-12s  %s\n", (int)wname, "name", (int)wshape, "shape", "dtype", "bytes",
         "bytes", "action");
  for (size_t i = 0; i < n; i++) {
    const fg_export_tensor *t = fg_export_plan_tensor(p, i);
    char dt[40];
    print_shape(shape, sizeof shape, t);
    snprintf(dt, sizeof dt, "%s -> %s", fg_dtype_name(t->src_dtype), fg_dtype_name(t->dst_dtype));
    printf("%-*s  %-*s  %-18s  %12" PRIu64 " -> %-12" PRIu64 "  %s", (int)wname, t->name, (int)wshape, shape, dt,
           t->src_bytes, t->dst_bytes, fg_export_action_name(t->action));
    if (t->action == FG_EXPORT_ACTION_COPY) printf(" (%s)", fg_export_why_name(t->why));
    printf("\n");
  }
}

static void print_totals(const fg_export_plan *p, const char *verb) {
  uint64_t a, b;
  uint32_t ft;
  char sa[32], sb[32];
  fg_export_plan_totals(p, &a, &b);
  printf("%s %zu tensors, %zu change type, %s -> %s (%" PRIu64 " -> %" PRIu64 " bytes)", verb,
         fg_export_plan_count(p), fg_export_plan_changed(p), fg_cli_human_bytes(a, sa, sizeof sa),
         fg_cli_human_bytes(b, sb, sizeof sb), a, b);
  if (fg_export_plan_file_type(p, &ft)) printf(", general.file_type = %" PRIu32, ft);
  printf("\n");
}

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "forgia export: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  usage(stderr);
  return 2;
}

int fg_cmd_export(int argc, char **argv) {
  const char *from_gguf = NULL, *from_st = NULL, *out = NULL, *dtype = NULL, *experts = NULL;
  const char *chunk = NULL;
  bool dry = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "--dry-run") == 0) {
      dry = true;
      continue;
    }
    static const char *const names[] = {"--from-gguf", "--from-safetensors", "--out", "--dtype",
                                        "--experts-dtype", "--chunk-mib"};
    const char **slots[] = {&from_gguf, &from_st, &out, &dtype, &experts, &chunk};
    int k = -1;
    const char *val = NULL;
    for (int j = 0; j < 6 && k < 0; j++) {
      size_t l = strlen(names[j]);
      if (strcmp(a, names[j]) == 0) {
        k = j;
        if (i + 1 >= argc) return bad_usage("%s needs a value", a);
        val = argv[++i];
      } else if (strncmp(a, names[j], l) == 0 && a[l] == '=') {
        k = j;
        val = a + l + 1;
      }
    }
    if (k < 0) return bad_usage("unknown argument '%s'", a);
    *slots[k] = val;
  }
  if (!from_gguf == !from_st) return bad_usage("%s", "give exactly one of --from-gguf and --from-safetensors");
  if (!out && !dry) return bad_usage("%s", "--out is required (or --dry-run)");
  fg_export_options opt = {0};
  if (dtype && fg_export_target_parse(dtype, &opt.dtype)) return bad_usage("%s", fg_last_error());
  if (experts && fg_export_target_parse(experts, &opt.experts)) return bad_usage("%s", fg_last_error());
  if (chunk) {
    char *end;
    unsigned long long mib = strtoull(chunk, &end, 10);
    if (*end || mib == 0 || mib > (1ull << 20)) return bad_usage("--chunk-mib '%s': expected 1..1048576", chunk);
    opt.chunk_bytes = (uint64_t)mib << 20;
  }

  const char *in = from_gguf ? from_gguf : from_st;
  fg_ckpt *src = NULL;
  fg_export_plan *plan = NULL;
  const fg_ckpt_format want = from_gguf ? FG_CKPT_GGUF : FG_CKPT_SAFETENSORS;
  fg_status st = fg_ckpt_open(in, &src);
  if (!st && fg_ckpt_format_of(src) != want)
    st = fg_fail(FG_ERR_BAD_MAGIC, "%s: a %s checkpoint, not %s (use %s)", in,
                 fg_ckpt_format_name(fg_ckpt_format_of(src)), fg_ckpt_format_name(want),
                 from_gguf ? "--from-safetensors" : "--from-gguf");
  if (!st) st = fg_export_plan_create(src, &opt, &plan);
  if (st) {
    fg_cli_report("export", in);
    fg_ckpt_close(src);
    return 1;
  }
  int rc = 0;
  if (dry) {
    print_plan(plan);
    print_totals(plan, "plan:");
  } else {
    run_ctx ctx = {.last_done = 0};
    uint64_t total;
    fg_export_plan_totals(plan, NULL, &total);
    fg_cli_progress_init(&ctx.bar, stdout, "tensors", fg_export_plan_count(plan), total);
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    st = fg_export_run(plan, out, on_progress, &ctx);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    fg_cli_progress_clear(&ctx.bar);
    if (st) {
      fflush(stdout);
      fg_cli_report("export", out);
      rc = 1;
    } else {
      double el = fg_cli_progress_elapsed(&ctx.bar);
      uint64_t read;
      char rin[32], rout[32], rss[32];
      fg_export_plan_totals(plan, &read, NULL);
      print_totals(plan, "wrote");
      printf("output %s in %.2f s (source %s/s, output %s/s); peak RSS %s\n", out, el,
             fg_cli_human_bytes(el > 0 ? (uint64_t)((double)read / el) : 0, rin, sizeof rin),
             fg_cli_human_bytes(el > 0 ? (uint64_t)((double)total / el) : 0, rout, sizeof rout),
             fg_cli_human_bytes(fg_cli_peak_rss(), rss, sizeof rss));
    }
  }
  fg_export_plan_free(plan);
  fg_ckpt_close(src);
  return rc;
}
