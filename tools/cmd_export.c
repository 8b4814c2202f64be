/* forgia export: re-emit a GGUF model or a safetensors checkpoint as one GGUF file,
 * optionally transcoding matrix weights (policy in include/forgia/export.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "forgia/export.h"
#include "forgia/export_merge.h"
#include "forgia/imatrix.h"
#include "util_args.h"
#include "util_export_open.h"
#include "util_ptqtp.h"
#include "util_progress.h"
#include "util_report.h"
#include "util_signal.h"
#include "util_tensor_types.h"
#include "util_text.h"

const char fg_cmd_export_summary[] = "write a GGUF model (or safetensors checkpoint) as GGUF, transcoding matrix weights";

static void usage(FILE *f) {
  fprintf(f,
          "usage: forgia export (--from-gguf IN | --from-safetensors FILE|DIR) --out OUT\n"
          "       forgia export IN OUT [MODE]     (as llama-quantize IN OUT TYPE: IN a GGUF, or a\n"
          "                     safetensors file or folder; MODE as --dtype)\n"
          "                     [--dtype MODE] [--experts-dtype TYPE] [--dry-run] [--chunk-mib N]\n"
          "                     [--pure] [--allow-requantize] [--leave-output-tensor]\n"
          "                     [--output-tensor-type TYPE] [--token-embedding-type TYPE]\n"
          "                     [--tensor-type PATTERN=TYPE]... [--tensor-type-file FILE] [--imatrix FILE]\n"
          "                     [--keep-split]\n\n"
          "MODE: verbatim (default); a single TYPE as ggml spells it: f32 f16 bf16 q8_0 q4_0 q4_1\n"
          "      q5_0 q5_1 q2_K q3_K q4_K q5_K q6_K tq1_0 tq2_0 iq4_nl iq4_xs mxfp4 nvfp4 q1_0 q2_0;\n"
          "      or a llama-quantize mixture, in any case: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q2_K_S Q3_K_S\n"
          "      Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4_MOE\n"
          "      IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M IQ1_S IQ1_M Q1_0 Q2_0 F16 BF16 F32\n"
          "      (Q3_K, Q4_K, Q5_K: the _M mixtures; MXFP4: MXFP4_MOE)\n"
          "  --dtype          a single type: matrix weights (2+ dims, name ending .weight, no 'norm')\n"
          "                   take it; a mixture: the tensors llama-quantize quantizes take the types\n"
          "                   it chooses for the model's architecture, in its tensor order.\n"
          "                   Rows that are not whole blocks take llama.cpp's fallback (q4_K -> q5_0,\n"
          "                   q6_K -> q8_0, ..., else f16); --dry-run shows each and why.\n"
          "                   A quantized source refuses a quantized target (no chain requantization).\n"
          "  --experts-dtype  target of *_exps.weight tensors; may requantize a quantized source\n"
          "  --pure           with a mixture: its default type for every tensor it quantizes\n"
          "  --allow-requantize  decode a quantized source and encode it again\n"
          "  --leave-output-tensor  with a mixture: output.weight keeps its type\n"
          "  --output-tensor-type TYPE, --token-embedding-type TYPE\n"
          "                   the type of output.weight / token_embd.weight\n"
          "  --tensor-type PATTERN=TYPE  tensors whose name the regex finds take TYPE (the first\n"
          "                   matching rule wins; PATTERN is lower-cased, as llama-quantize does)\n"
          "  --tensor-type-file FILE  one PATTERN=TYPE per line\n"
          "  --imatrix FILE   llama.cpp importance matrix (GGUF or legacy .dat): the encoders that\n"
          "                   take weights use the tensor's entry (ggml's bytes); it enables the\n"
          "                   i-quants that need one (IQ2_XXS, IQ2_XS, IQ1_S, Q2_K_S, ...)\n"
          "  --keep-split     one output per part of a split source: OUT-00001-of-0000N.gguf ...\n"
          "  --dry-run        print the per-tensor plan and write nothing\n"
          "  --chunk-mib N    f32 working buffer per step (default 64)\n"
          "  --adapters DIR_OR_FILE --alpha F\n"
          "                   merge LoRA adapters (a safetensors file, or a checkpoint folder with\n"
          "                   adapters.safetensors) layers.<i>.<q|k|v|o|gate|up|down>.lora_{a,b} into\n"
          "                   blk.<i>.attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down.weight\n"
          "                   of an f32/f16/bf16 GGUF (scale alpha/rank); --alpha is required; not with\n"
          "                   --dtype/--experts-dtype (merge, then quantize in a second run)\n"
          "Metadata is copied byte-verbatim (split.* keys dropped); a --dtype sets general.file_type.\n"
          "safetensors config.json values become safetensors.config.* keys.\n");
  fg_ptqtp_cli_usage(f);
}

typedef struct run_ctx {
  fg_cli_progress bar;
  size_t last_done;
} run_ctx;

/* Draws progress and cancels the run (the library removes its temporary file) once SIGINT
 * or SIGTERM has come. */
static bool on_progress(const fg_export_progress *p, void *user) {
  run_ctx *c = user;
  if (fg_cli_signal_caught()) return false;
  const char *detail = NULL;
  char buf[96];
  /* The call after a tensor's last chunk comes with tensors_done advanced past it. */
  if (p->tensors_done != c->last_done) {
    c->last_done = p->tensors_done;
    snprintf(buf, sizeof buf, "%s -> %s", fg_dtype_name(p->tensor->src_dtype), fg_dtype_name(p->tensor->dst_dtype));
    detail = buf;
  }
  fg_cli_progress_update(&c->bar, p->tensors_done, p->bytes_done, p->tensor->name, strlen(p->tensor->name), detail);
  return true;
}

static void print_shape(char *buf, size_t cap, const fg_export_tensor *t) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < t->ndim && n < cap; d++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, d ? ", " : "", t->shape[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Columns shown per character, as fg_cli_put_escaped counts them. */
static size_t shown_width(const char *s) {
  char buf[1024];
  fg_cli_escape_into(buf, sizeof buf, s, strlen(s));
  size_t w = 0;
  for (const unsigned char *u = (const unsigned char *)buf; *u; u++) w += (*u & 0xC0) != 0x80;
  return w;
}

static void print_plan(const fg_export_plan *p) {
  size_t n = fg_export_plan_count(p), wname = 4, wshape = 5;
  char shape[96];
  for (size_t i = 0; i < n; i++) {
    const fg_export_tensor *t = fg_export_plan_tensor(p, i);
    print_shape(shape, sizeof shape, t);
    if (shown_width(t->name) > wname) wname = shown_width(t->name);
    if (strlen(shape) > wshape) wshape = strlen(shape);
  }
  printf("%-*s  %-*s  %-18s  %12s -> %-12s  %s\n", (int)wname, "name", (int)wshape, "shape", "dtype", "bytes",
         "bytes", "action");
  for (size_t i = 0; i < n; i++) {
    const fg_export_tensor *t = fg_export_plan_tensor(p, i);
    char dt[40];
    print_shape(shape, sizeof shape, t);
    snprintf(dt, sizeof dt, "%s -> %s", fg_dtype_name(t->src_dtype), fg_dtype_name(t->dst_dtype));
    fg_cli_puts_escaped(stdout, t->name, (int)wname);
    printf("  %-*s  %-18s  %12" PRIu64 " -> %-12" PRIu64 "  %s", (int)wshape, shape, dt, t->src_bytes, t->dst_bytes,
           fg_export_action_name(t->action));
    if (t->action == FG_EXPORT_ACTION_COPY && t->why != FG_EXPORT_WHY_TARGET) {
      printf(" (%s)", fg_export_why_name(t->why));
    } else if (t->why == FG_EXPORT_WHY_FALLBACK) {
      printf(" (fallback: %" PRIu64 " elements per row are not whole %u-element blocks of %s)", t->ne[0],
             fg_dtype_info(t->wanted)->block_elems, fg_dtype_name(t->wanted));
    } else if (t->why == FG_EXPORT_WHY_RULE && t->rule) {
      printf(" (%s)", t->rule);
    } else if (t->why == FG_EXPORT_WHY_OVERRIDE) {
      printf(" (override)");
    }
    if (t->weights) printf(" [imatrix]");
    else if (t->needs_imatrix) printf(" [needs an importance matrix]");
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
  if (fg_export_plan_file_type(p, &ft)) {
    const char *mix = fg_export_mixture_name(ft);
    printf(", general.file_type = %" PRIu32, ft);
    if (mix) printf(" (%s)", mix);
  }
  if (fg_export_plan_fallbacks(p)) printf(", %zu fallbacks", fg_export_plan_fallbacks(p));
  printf("\n");
}

static const char synopsis[] =
    "forgia export --from-gguf IN | --from-safetensors PATH --out OUT [options], or IN OUT [MODE] [options]";

/* The positional form, as llama-quantize is called: IN OUT [MODE] into the flags' places. A
 * folder or a *.safetensors name is a safetensors source, anything else a GGUF (whose open
 * says clearly what it is not). */
static int take_positional(const fg_cli_spec *spec, const char *const pos[3], const char **from_gguf,
                           const char **from_st, const char **out, const char **dtype) {
  if (!pos[0]) return FG_CLI_GO;
  if (*from_gguf || *from_st)
    return fg_cli_usage_error(spec, pos[0], "the input is given twice (positional and --from-*)");
  if (pos[1] && *out) return fg_cli_usage_error(spec, pos[1], "the output is given twice (positional and --out)");
  if (pos[2] && *dtype) return fg_cli_usage_error(spec, pos[2], "the mode is given twice (positional and --dtype)");
  struct stat st;
  size_t n = strlen(pos[0]);
  bool st_src = (stat(pos[0], &st) == 0 && S_ISDIR(st.st_mode)) ||
                (n >= 12 && strcmp(pos[0] + n - 12, ".safetensors") == 0);
  *(st_src ? from_st : from_gguf) = pos[0];
  if (pos[1]) *out = pos[1];
  if (pos[2]) *dtype = pos[2];
  return FG_CLI_GO;
}

static int target_error(const fg_cli_spec *spec, const char *flag) {
  char problem[512];
  const char *m = fg_last_error();
  if (strncmp(m, "export: ", 8) == 0) m += 8; /* the command already says export */
  snprintf(problem, sizeof problem, "%s", m);
  return fg_cli_usage_error(spec, flag, "%s", problem);
}

/* --adapters/--alpha: the merge mode (forgia/export_merge.h), its own run over the source. */
static int merge_mode(const fg_cli_spec *spec, const char *from_gguf, const char *from_st, const char *out,
                      const char *dtype, const char *experts, const char *adapters, const char *alpha,
                      const fg_export_options *opt, bool dry) {
  if (!adapters) return fg_cli_usage_error(spec, "--alpha", "only with --adapters");
  if (!alpha)
    return fg_cli_usage_error(spec, "--alpha", "required with --adapters (the file stores A and B, not alpha)");
  if (dtype || experts)
    return fg_cli_usage_error(spec, dtype ? "--dtype" : "--experts-dtype",
                              "not with --adapters (merge into the base dtype, then quantize in a second run)");
  if (from_st) return fg_cli_usage_error(spec, "--adapters", "merges into a GGUF model (--from-gguf)");
  char *end;
  errno = 0;
  const float a = strtof(alpha, &end);
  if (*end || end == alpha || errno || !isfinite(a))
    return fg_cli_usage_error(spec, "--alpha", "'%s': expected a finite number", alpha);
  fg_cli_signals_catch();
  fg_ckpt *src = NULL;
  fg_export_merge *m = NULL;
  fg_status st;
  const int open_rc = fg_cli_export_open(from_gguf, FG_CKPT_GGUF, NULL, out, &src);
  if (open_rc) return open_rc;
  const fg_export_merge_options mo = {.adapters = adapters, .alpha = a, .chunk_bytes = opt->chunk_bytes};
  int rc = 0;
  if ((st = fg_export_merge_create(src, &mo, &m))) {
    fg_cli_report("export", adapters);
    fg_ckpt_close(src);
    return 1;
  }
  for (size_t i = 0; i < fg_export_merge_count(m); i++) {
    uint32_t r;
    const char *base = fg_export_merge_base(m, i, &r);
    printf("merge ");
    fg_cli_puts_escaped(stdout, base, 0);
    printf(" (rank %" PRIu32 ", scale %g)\n", r, (double)(a / (float)r));
  }
  if (!dry) {
    run_ctx ctx = {.last_done = 0};
    fg_cli_progress_init(&ctx.bar, false, "tensors", fg_ckpt_count(src), 0);
    st = fg_export_merge_run(m, out, on_progress, &ctx);
    fg_cli_progress_clear(&ctx.bar);
    if (st && fg_cli_signal_caught()) {
      rc = fg_cli_interrupted("export", out);
    } else if (st) {
      fg_cli_report("export", out);
      rc = 1;
    } else {
      char rss[32];
      printf("merged %zu LoRA adapters from ", fg_export_merge_count(m));
      fg_cli_puts_escaped(stdout, fg_export_merge_path(m), 0);
      printf(" (alpha %g) into ", (double)a);
      fg_cli_puts_escaped(stdout, out, 0);
      printf("; peak RSS %s\n", fg_cli_human_bytes(fg_cli_peak_rss(), rss, sizeof rss));
    }
  }
  fg_export_merge_free(m);
  fg_ckpt_close(src);
  return rc;
}


static int export_main(const fg_cli_spec *specp, const fg_tensor_types_cli *tt, const fg_imatrix *im,
                       const char *im_path, const char *from_gguf,
                       const char *from_st, const char *out, const char *dtype, const char *experts,
                       const char *chunk, const char *adapters, const char *alpha, const char *out_type,
                       const char *embd_type, bool dry, bool pure, bool requant, bool leave_output,
                       bool keep_split) {
  const fg_cli_spec spec = *specp;
  int rc;
  if (!from_gguf == !from_st)
    return fg_cli_usage_error(&spec, NULL, "give exactly one of --from-gguf and --from-safetensors");
  if (!out && !dry) return fg_cli_usage_error(&spec, "--out", "missing (or give --dry-run)");
  fg_export_options opt = {0};
  /* the library's message names the bad target and lists the good ones */
  if (dtype && fg_export_target_parse(dtype, &opt.dtype)) return target_error(&spec, "--dtype");
  if (experts && fg_export_target_parse(experts, &opt.experts)) return target_error(&spec, "--experts-dtype");
  if (experts && opt.experts.mode == FG_EXPORT_MODE_MIXTURE)
    return fg_cli_usage_error(&spec, "--experts-dtype", "'%s' is a mixture; expected a single type (q4_K, ...)",
                              experts);
  const char *const tflags[2] = {"--output-tensor-type", "--token-embedding-type"};
  const char *const tvals[2] = {out_type, embd_type};
  fg_export_target *const tdst[2] = {&opt.output_type, &opt.token_embd_type};
  for (int k = 0; k < 2; k++) {
    if (!tvals[k]) continue;
    fg_dtype t;
    if (!fg_cli_ggml_type(tvals[k], &t))
      return fg_cli_usage_error(&spec, tflags[k], "'%s' is not a ggml type (q4_K, q8_0, f16, ...)", tvals[k]);
    *tdst[k] = (fg_export_target){FG_EXPORT_MODE_DTYPE, t, 0};
  }
  if ((pure || leave_output) && opt.dtype.mode != FG_EXPORT_MODE_MIXTURE)
    return fg_cli_usage_error(&spec, pure ? "--pure" : "--leave-output-tensor",
                              "only with a llama-quantize mixture as --dtype (Q4_K_M, ...)");
  opt.pure = pure;
  opt.allow_requantize = requant;
  opt.leave_output = leave_output;
  opt.tensor_types = tt->rules;
  opt.n_tensor_types = tt->n;
  opt.imatrix = im;
  opt.keep_split = keep_split;
  opt.imatrix_label = im_path;
  if (chunk) {
    char *end;
    errno = 0;
    unsigned long long mib = strtoull(chunk, &end, 10);
    if (*end || end == chunk || errno || chunk[0] == '-' || mib == 0 || mib > (1ull << 20))
      return fg_cli_usage_error(&spec, "--chunk-mib", "'%s': expected 1..1048576", chunk);
    opt.chunk_bytes = (uint64_t)mib << 20;
  }
  if (adapters || alpha) return merge_mode(&spec, from_gguf, from_st, out, dtype, experts, adapters, alpha, &opt, dry);
  fg_cli_signals_catch();
  rc = 0;

  const char *in = from_gguf ? from_gguf : from_st;
  fg_ckpt *src = NULL;
  fg_export_plan *plan = NULL;
  const fg_ckpt_format want = from_gguf ? FG_CKPT_GGUF : FG_CKPT_SAFETENSORS;
  rc = fg_cli_export_open(in, want, from_gguf ? "--from-safetensors" : "--from-gguf", out, &src);
  if (rc) return rc;
  fg_status st = fg_export_plan_create(src, &opt, &plan);

  if (st || fg_cli_signal_caught()) {
    if (fg_cli_signal_caught()) {
      rc = fg_cli_interrupted("export", in);
    } else {
      fg_cli_report("export", in);
      rc = 1;
    }
    fg_export_plan_free(plan);
    fg_ckpt_close(src);
    return rc;
  }
  if (dry) {
    print_plan(plan);
    print_totals(plan, "plan:");
    if (fg_export_plan_ready(plan)) printf("warning: the export would fail: %s\n", fg_last_error());
  } else {
    run_ctx ctx = {.last_done = 0};
    uint64_t total;
    fg_export_plan_totals(plan, NULL, &total);
    fg_cli_progress_init(&ctx.bar, false, "tensors", fg_export_plan_count(plan), total);
    st = fg_export_run(plan, out, on_progress, &ctx);
    fg_cli_progress_clear(&ctx.bar);
    if (st && fg_cli_signal_caught()) {
      rc = fg_cli_interrupted("export", out); /* the library removed its temporary file */
    } else if (st) {
      fg_cli_report("export", out);
      rc = 1;
    } else {
      double el = fg_cli_progress_elapsed(&ctx.bar);
      uint64_t read;
      char rin[32], rout[32], rss[32];
      fg_export_plan_totals(plan, &read, NULL);
      print_totals(plan, "wrote");
      printf("output ");
      const size_t nout = fg_export_plan_outputs(plan);
      char part[4096];
      if (nout > 1 && fg_export_plan_output_path(plan, out, 0, part, sizeof part) == FG_OK) {
        fg_cli_puts_escaped(stdout, part, 0);
        printf(" and %zu more parts", nout - 1);
      } else if (nout == 1 && fg_export_plan_output_path(plan, out, 0, part, sizeof part) == FG_OK) {
        fg_cli_puts_escaped(stdout, part, 0);
      } else {
        fg_cli_puts_escaped(stdout, out, 0);
      }
      printf(" in %.2f s (source %s/s, output %s/s); peak RSS %s\n", el,
             fg_cli_human_bytes(el > 0 ? (uint64_t)((double)read / el) : 0, rin, sizeof rin),
             fg_cli_human_bytes(el > 0 ? (uint64_t)((double)total / el) : 0, rout, sizeof rout),
             fg_cli_human_bytes(fg_cli_peak_rss(), rss, sizeof rss));
    }
  }
  fg_export_plan_free(plan);
  fg_ckpt_close(src);
  return rc;
}

int fg_cmd_export(int argc, char **argv) {
  const char *from_gguf = NULL, *from_st = NULL, *out = NULL, *dtype = NULL, *experts = NULL;
  const char *chunk = NULL, *adapters = NULL, *alpha = NULL, *out_type = NULL, *embd_type = NULL, *imatrix = NULL;
  bool dry = false, pure = false, requant = false, leave_output = false, keep_split = false;
  const fg_cli_opt opts[] = {{"--from-gguf", &from_gguf, NULL}, {"--from-safetensors", &from_st, NULL},
                             {"--out", &out, NULL},             {"--dtype", &dtype, NULL},
                             {"--experts-dtype", &experts, NULL}, {"--chunk-mib", &chunk, NULL},
                             {"--dry-run", NULL, &dry},         {"--adapters", &adapters, NULL},
                             {"--alpha", &alpha, NULL},         {"--pure", NULL, &pure},
                             {"--allow-requantize", NULL, &requant}, {"--leave-output-tensor", NULL, &leave_output},
                             {"--output-tensor-type", &out_type, NULL}, {"--token-embedding-type", &embd_type, NULL},
                             {"--imatrix", &imatrix, NULL},     {"--keep-split", NULL, &keep_split}};
  static const char *const pos_names[3] = {"IN", "OUT", "MODE"};
  const char *pos[3] = {NULL, NULL, NULL};
  const fg_cli_spec spec = {"export", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, pos, 3, 3};
  fg_ptqtp_cli ptqtp; /* --ptqtp* flags are taken out first (tools/util_ptqtp.h) */
  fg_tensor_types_cli tt = {0};
  int rc = fg_ptqtp_cli_take(&spec, &argc, argv, &ptqtp);
  if (rc == FG_CLI_GO) rc = fg_tensor_types_cli_take(&spec, &argc, argv, &tt);
  if (rc == FG_CLI_GO) rc = fg_cli_parse(&spec, argc, argv);
  if (rc == FG_CLI_GO) rc = take_positional(&spec, pos, &from_gguf, &from_st, &out, &dtype);
  if (rc != FG_CLI_GO) {
    fg_ptqtp_cli_free(&ptqtp);
    fg_tensor_types_cli_free(&tt);
    return rc;
  }
  if (ptqtp.on) {
    fg_tensor_types_cli_free(&tt);
    return fg_ptqtp_cli_main(&spec, &ptqtp, from_gguf, from_st, out, dry);
  }
  fg_imatrix *im = NULL;
  if (imatrix && (adapters || alpha)) {
    rc = fg_cli_usage_error(&spec, "--imatrix", "not with --adapters");
  } else if (imatrix && fg_imatrix_open(imatrix, &im)) {
    fg_cli_report("export", imatrix);
    rc = 1;
  } else {
    rc = export_main(&spec, &tt, im, imatrix, from_gguf, from_st, out, dtype, experts, chunk, adapters, alpha,
                     out_type, embd_type, dry, pure, requant, leave_output, keep_split);
  }
  fg_imatrix_close(im);
  fg_tensor_types_cli_free(&tt);
  return rc;
}

