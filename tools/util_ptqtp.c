/* `forgia export --ptqtp`: flags, plan printing and the run with its per-tensor diagnostics
 * (tools/util_ptqtp.h). */
#define _POSIX_C_SOURCE 200809L
#include "util_ptqtp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "forgia/export.h"
#include "forgia/export_ptqtp.h"
#include "util_export_open.h"
#include "util_progress.h"
#include "util_report.h"
#include "util_signal.h"
#include "util_text.h"

void fg_ptqtp_cli_usage(FILE *f) {
  fprintf(f,
          "PTQTP mode (ternary planes; exclusive with --dtype/--experts-dtype/--adapters; GGUF input):\n"
          "  --ptqtp[=K]            replace eligible matrices with K (1..3, default 2) TQ2_0 planes\n"
          "                         NAME.ptqtp0..K-1 (2-D .weight, or 3-D *_exps stacks per expert;\n"
          "                         ne[0] a multiple of 256; no 'norm'; quantized sources dequantized)\n"
          "  --ptqtp-planes K       the plane count (implies --ptqtp)\n"
          "  --ptqtp-tie            scales locked to ratio 3 (a uniform 3^K-level quantizer); K >= 2\n"
          "  --ptqtp-include SUB[,SUB]  quantize only names containing one (repeatable; replaces the\n"
          "                         default that keeps token_embd and output.weight)\n"
          "  --ptqtp-exclude SUB[,SUB]  never quantize names containing one (repeatable)\n"
          "  --dry-run              with --ptqtp: print the per-tensor plan, write nothing\n");
}

static int parse_planes(const fg_cli_spec *spec, const char *flag, const char *v, fg_ptqtp_cli *c) {
  char *end;
  errno = 0;
  long k = strtol(v, &end, 10);
  if (!*v || *end || errno || k < 1 || k > 3)
    return fg_cli_usage_error(spec, flag, "'%s': the plane count must be 1, 2 or 3", v);
  if (c->planes && c->planes != (int)k)
    return fg_cli_usage_error(spec, flag, "plane count %ld differs from the %d given before", k, c->planes);
  c->planes = (int)k;
  return FG_CLI_GO;
}

static int add_filters(const fg_cli_spec *spec, const char *flag, const char *v, char ***list, size_t *n) {
  if (!v || !*v) return fg_cli_usage_error(spec, flag, "missing value (SUB[,SUB])");
  for (const char *s = v; *s;) {
    const char *e = strchr(s, ',');
    const size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len) {
      char **l = realloc(*list, (*n + 1) * sizeof *l);
      char *copy = malloc(len + 1);
      if (l) *list = l;
      if (!l || !copy) {
        free(copy);
        return fg_cli_usage_error(spec, flag, "out of memory");
      }
      memcpy(copy, s, len);
      copy[len] = 0;
      (*list)[(*n)++] = copy;
    }
    s += len + (e != NULL);
  }
  return FG_CLI_GO;
}

/* Options of export that take a value: their value is never one of ours. */
static bool takes_value(const char *arg) {
  static const char *const names[] = {"--from-gguf", "--from-safetensors", "--out", "--dtype", "--experts-dtype",
                                      "--chunk-mib", "--adapters", "--alpha"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(arg, names[i]) == 0) return true;
  return false;
}

static const char *const fg_ptqtp_other_modes[] = {"--dtype", "--experts-dtype", "--adapters", "--alpha", "--chunk-mib"};

int fg_ptqtp_cli_take(const fg_cli_spec *spec, int *argc, char **argv, fg_ptqtp_cli *c) {
  memset(c, 0, sizeof *c);
  const char *other = NULL;
  int kept = 1, rc = FG_CLI_GO;
  bool done = false;
  for (int i = 1; i < *argc && rc == FG_CLI_GO; i++) {
    const char *a = argv[i], *v;
    if (done || strcmp(a, "--") == 0) {
      done = true;
      argv[kept++] = argv[i];
      continue;
    }
    if (fg_cli_flag_is(a, "--ptqtp", &v)) {
      c->on = true;
      if (v) rc = parse_planes(spec, "--ptqtp", v, c);
    } else if (fg_cli_flag_is(a, "--ptqtp-planes", &v)) {
      c->on = true;
      if (!v && i + 1 < *argc) v = argv[++i];
      rc = v ? parse_planes(spec, "--ptqtp-planes", v, c) : fg_cli_usage_error(spec, "--ptqtp-planes", "missing value");
    } else if (fg_cli_flag_is(a, "--ptqtp-tie", &v)) {
      c->on = c->tie = true;
      if (v) rc = fg_cli_usage_error(spec, "--ptqtp-tie", "takes no value");
    } else if (fg_cli_flag_is(a, "--ptqtp-include", &v) || fg_cli_flag_is(a, "--ptqtp-exclude", &v)) {
      const bool inc = a[8] == 'i';
      c->on = true;
      if (!v && i + 1 < *argc) v = argv[++i];
      rc = inc ? add_filters(spec, "--ptqtp-include", v, &c->include, &c->n_include)
               : add_filters(spec, "--ptqtp-exclude", v, &c->exclude, &c->n_exclude);
    } else {
      for (size_t k = 0; k < sizeof fg_ptqtp_other_modes / sizeof *fg_ptqtp_other_modes; k++)
        if (fg_cli_flag_is(a, fg_ptqtp_other_modes[k], &v) && !other) other = fg_ptqtp_other_modes[k];
      argv[kept++] = argv[i];
      if (takes_value(a) && i + 1 < *argc) argv[kept++] = argv[++i];
    }
  }
  if (rc != FG_CLI_GO) {
    fg_ptqtp_cli_free(c);
    return rc;
  }
  *argc = kept;
  argv[kept] = NULL;
  if (!c->on) return FG_CLI_GO;
  if (!c->planes) c->planes = 2;
  if (other)
    rc = fg_cli_usage_error(spec, other, "not with --ptqtp: PTQTP is its own mode (quantize, transcode or merge "
                            "in separate runs)");
  else if (c->tie && c->planes < 2)
    rc = fg_cli_usage_error(spec, "--ptqtp-tie", "locks the plane scales to ratio 3, so it needs at least 2 "
                            "planes (got %d)", c->planes);
  if (rc != FG_CLI_GO) fg_ptqtp_cli_free(c);
  return rc;
}

void fg_ptqtp_cli_free(fg_ptqtp_cli *c) {
  for (size_t i = 0; i < c->n_include; i++) free(c->include[i]);
  for (size_t i = 0; i < c->n_exclude; i++) free(c->exclude[i]);
  free(c->include);
  free(c->exclude);
  memset(c, 0, sizeof *c);
}

static void shape_of(char *buf, size_t cap, const fg_export_ptqtp_tensor *t) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < t->ndim && n < cap; d++) /* row-major, outermost first */
    n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, d ? ", " : "", t->ne[t->ndim - 1 - d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

static void target_of(char *buf, size_t cap, const fg_export_ptqtp_tensor *t, int k) {
  if (t->why != FG_PTQTP_WHY_QUANTIZE)
    snprintf(buf, cap, "%s", fg_dtype_name(t->src_dtype));
  else
    snprintf(buf, cap, "%s -> tq2_0 x%d", fg_dtype_name(t->src_dtype), k);
}

static void print_plan(const fg_export_ptqtp_plan *p) {
  const size_t n = fg_export_ptqtp_plan_count(p);
  const int k = fg_export_ptqtp_plan_planes(p);
  size_t wname = 4, wshape = 5;
  char shape[96], dt[48];
  for (size_t i = 0; i < n; i++) {
    const fg_export_ptqtp_tensor *t = fg_export_ptqtp_plan_tensor(p, i);
    shape_of(shape, sizeof shape, t);
    char esc[1024];
    fg_cli_escape_into(esc, sizeof esc, t->name, strlen(t->name));
    if (strlen(esc) > wname) wname = strlen(esc);
    if (strlen(shape) > wshape) wshape = strlen(shape);
  }
  printf("%-*s  %-*s  %-18s  %12s -> %-12s  %s\n", (int)wname, "name", (int)wshape, "shape", "dtype", "bytes", "bytes",
         "action");
  for (size_t i = 0; i < n; i++) {
    const fg_export_ptqtp_tensor *t = fg_export_ptqtp_plan_tensor(p, i);
    shape_of(shape, sizeof shape, t);
    target_of(dt, sizeof dt, t, k);
    fg_cli_puts_escaped(stdout, t->name, (int)wname);
    printf("  %-*s  %-18s  %12" PRIu64 " -> %-12" PRIu64 "  ", (int)wshape, shape, dt, t->src_bytes, t->dst_bytes);
    if (t->why != FG_PTQTP_WHY_QUANTIZE)
      printf("keep (%s)\n", fg_export_ptqtp_why_name(t->why));
    else if (t->ndim == 3)
      printf("ptqtp per expert (%" PRIu64 " experts), working set %" PRIu64 " bytes\n", t->experts, t->workset_bytes);
    else
      printf("ptqtp, working set %" PRIu64 " bytes\n", t->workset_bytes);
  }
}

static void print_totals(const fg_export_ptqtp_totals *t, int k, bool tie) {
  char a[32], b[32], c[32], d[32], w[32];
  printf("plan: %zu tensors; %zu ptqtp-quantized (K=%d%s, %zu plane tensors, %zu expert stacks), %zu kept "
         "(%zu expert stacks)\n", t->tensors, t->quantized, k, tie ? " tied" : "", t->plane_tensors, t->stacks,
         t->kept, t->kept_stacks);
  printf("bytes: %s -> %s total (%" PRIu64 " -> %" PRIu64 "); quantized tensors %s -> %s\n",
         fg_cli_human_bytes(t->src_bytes, a, sizeof a), fg_cli_human_bytes(t->dst_bytes, b, sizeof b), t->src_bytes,
         t->dst_bytes, fg_cli_human_bytes(t->quant_src_bytes, c, sizeof c),
         fg_cli_human_bytes(t->quant_dst_bytes, d, sizeof d));
  printf("peak working set (planned): %s (%" PRIu64 " bytes)\n", fg_cli_human_bytes(t->peak_workset_bytes, w, sizeof w),
         t->peak_workset_bytes);
}

/* One line per quantized tensor: the solver's diagnostics. */
static bool on_tensor(const fg_export_ptqtp_progress *p, void *user) {
  const int k = *(const int *)user;
  if (fg_cli_signal_caught()) return false;
  if (!p->stats) return true;
  const fg_export_ptqtp_tensor *t = p->tensor;
  const fg_ptqtp_stats *s = p->stats;
  char shape[96];
  shape_of(shape, sizeof shape, t);
  printf("[%zu/%zu] ptqtp ", p->index + 1, p->count);
  fg_cli_puts_escaped(stdout, t->name, 0);
  printf(" %s %s -> tq2_0 x%d  rel_err %.4f", shape, fg_dtype_name(t->src_dtype), k, s->rel_frob_err);
  if (t->experts > 1) printf(" (mean of %" PRIu64 " experts, max %.4f)", t->experts, p->max_rel_err);
  printf("  zero");
  for (int i = 0; i < k; i++) printf("%c%.3f", i ? '/' : ' ', s->zero_frac[i]);
  printf("  iters %.1f  unconverged %" PRIu64 "/%" PRIu64 "  %.2f s\n", s->mean_iterations, s->unconverged_groups,
         s->group_count, p->seconds);
  fflush(stdout);
  return true;
}

static int run_mode(const fg_ptqtp_cli *c, const fg_ckpt *src, const char *in, const char *out, bool dry) {
  fg_export_ptqtp_options o = fg_export_ptqtp_options_default();
  o.solver.planes = c->planes;
  o.solver.tie_scales = c->tie;
  o.include = (const char *const *)c->include;
  o.n_include = c->n_include;
  o.exclude = (const char *const *)c->exclude;
  o.n_exclude = c->n_exclude;
  fg_export_ptqtp_plan *p = NULL;
  if (fg_export_ptqtp_plan_create(src, &o, &p)) {
    fg_cli_report("export", in);
    return 1;
  }
  fg_export_ptqtp_totals tot;
  fg_export_ptqtp_plan_totals(p, &tot);
  int rc = 0;
  if (dry) {
    print_plan(p);
    print_totals(&tot, c->planes, c->tie);
  } else {
    fg_export_ptqtp_summary s;
    const double t0 = fg_clock_seconds();
    fg_status st = fg_export_ptqtp_run(p, out, on_tensor, (void *)&c->planes, &s);
    const double el = fg_clock_seconds() - t0;
    if (st && fg_cli_signal_caught()) {
      rc = fg_cli_interrupted("export", out);
    } else if (st) {
      fg_cli_report("export", out);
      rc = 1;
    } else {
      char a[32], b[32], r[32];
      printf("exported ");
      fg_cli_puts_escaped(stdout, in, 0);
      printf(" -> ");
      fg_cli_puts_escaped(stdout, out, 0);
      printf(" (PTQTP K=%d%s) in %.2f s, %s/s of source\n", c->planes, c->tie ? " tied" : "", el,
             fg_cli_human_bytes(el > 0 ? (uint64_t)((double)tot.src_bytes / el) : 0, a, sizeof a));
      print_totals(&tot, c->planes, c->tie);
      printf("groups: %" PRIu64 ", unconverged %" PRIu64 "; largest rel_err %.4f\n", s.groups, s.unconverged_groups,
             s.max_rel_err);
      printf("peak tensor working set: %s (%" PRIu64 " bytes); peak RSS: %s (%" PRIu64 " bytes)\n",
             fg_cli_human_bytes(s.peak_workset_bytes, b, sizeof b), s.peak_workset_bytes,
             fg_cli_human_bytes(s.peak_rss_bytes, r, sizeof r), s.peak_rss_bytes);
    }
  }
  fg_export_ptqtp_plan_free(p);
  return rc;
}

int fg_ptqtp_cli_main(const fg_cli_spec *spec, fg_ptqtp_cli *c, const char *from_gguf, const char *from_st,
                      const char *out, bool dry) {
  int rc;
  if (from_st || !from_gguf) {
    rc = fg_cli_usage_error(spec, from_st ? "--from-safetensors" : NULL,
                            "--ptqtp reads a GGUF model: give --from-gguf (its name policy is GGUF's)");
  } else if (!out && !dry) {
    rc = fg_cli_usage_error(spec, "--out", "missing (or give --dry-run)");
  } else {
    fg_cli_signals_catch();
    fg_ckpt *src = NULL;
    rc = fg_cli_export_open(from_gguf, FG_CKPT_GGUF, NULL, out, &src);
    if (!rc) rc = run_mode(c, src, from_gguf, out, dry);
    fg_ckpt_close(src);
  }
  fg_ptqtp_cli_free(c);
  return rc;
}
