/* forgia export: re-emit a GGUF model or a safetensors checkpoint as one GGUF file,
 * optionally transcoding matrix weights (policy in include/forgia/export.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
#include "util_threads.h"

const char fg_cmd_export_summary[] = "write a GGUF model (or safetensors checkpoint) as GGUF, transcoding matrix weights";

static void usage(FILE *f) {
  fprintf(f,
          "usage: forgia export (--from-gguf IN | --from-safetensors FILE|DIR) --out OUT\n"
          "       forgia export IN OUT [TYPE [NTHREADS]]   (as llama-quantize IN OUT TYPE NTHREADS: IN a\n"
          "                     GGUF, or a safetensors file or folder)\n"
          "                     [--dtype MODE] [--experts-dtype TYPE] [--threads N] [--dry-run]\n"
          "                     [--chunk-mib N] [--pure] [--allow-requantize] [--leave-output-tensor]\n"
          "                     [--output-tensor-type TYPE] [--token-embedding-type TYPE]\n"
          "                     [--tensor-type PATTERN=TYPE]... [--tensor-type-file FILE] [--imatrix FILE]\n"
          "                     [--keep-split] [--shard-size SIZE]\n"
          "       forgia export --from-gguf IN --out OUT.gguf (--adapters D --alpha F | --weights D)\n\n"
          "OUT's name chooses the format: *.gguf writes GGUF; *.safetensors one safetensors file; a\n"
          "folder (absent or empty) with --shard-size SIZE (bytes, 500MB, 2GB, 1GiB) a sharded one:\n"
          "model-0000i-of-0000N.safetensors, model.safetensors.index.json (transformers' layout) and\n"
          "the source's config.json. Anything else is refused. Safetensors holds dense types: MODE\n"
          "verbatim, f32, f16 or bf16 (a GGUF's block types are dequantized, so a Q4_K_M GGUF\n"
          "--dtype f32 is its values for Python tools), tensors keep their names, shapes are\n"
          "row-major (GGUF's ne reversed); __metadata__ gets format=pt and the source's __metadata__\n"
          "or a GGUF's scalar keys as strings (arrays, the tokenizer's among them, are dropped).\n\n"
          "MODE: verbatim (default); a single type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K\n"
          "      q5_K q6_K tq1_0 tq2_0 iq4_nl iq4_xs mxfp4 nvfp4 q1_0 q2_0; or a llama-quantize mixture:\n"
          "      Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K\n"
          "      IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4_MOE IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M\n"
          "      IQ1_S IQ1_M Q1_0 Q2_0 F16 BF16 F32\n"
          "      (names in any case; which list a name is read from depends on the spelling:)\n"
          "  --dtype NAME     as Fucina's export. A single type's name, in any case, is that type\n"
          "                   (q4_k, Q4_K and q4_K are all q4_K; Q8_0 is q8_0): matrix weights (2+\n"
          "                   dims, name ending .weight, no 'norm') take it. Any other name is the\n"
          "                   mixture (Q4_K_M, IQ2_XS, MXFP4_MOE, ...): the tensors llama-quantize\n"
          "                   quantizes take the types it chooses for the model's architecture, in\n"
          "                   its tensor order. Rows that are not whole blocks take llama.cpp's\n"
          "                   fallback (q4_K -> q5_0, q6_K -> q8_0, ..., else f16); --dry-run shows\n"
          "                   each tensor's type and why, and names the target on its last line.\n"
          "                   A quantized source refuses a quantized target (no chain requantization).\n"
          "                   A mixture reads GGUF metadata and tensor names: over a safetensors\n"
          "                   source (or into a safetensors output) only F32, F16 and BF16 are\n"
          "                   taken, as the single type; give --dtype q8_0 (...) instead of Q8_0.\n"
          "  TYPE (positional) as llama-quantize: every name is its mixture (Q8_0, F16 too), with\n"
          "                   its aliases Q3_K, Q4_K, Q5_K = the _M mixtures and MXFP4 = MXFP4_MOE;\n"
          "                   its file-type numbers (15 = Q4_K_M) and COPY (= verbatim) are taken\n"
          "                   too; nvfp4 and the others outside its table are --dtype only\n"
          "  NTHREADS, --threads N  threads that decode and encode (default: all cores; the output's\n"
          "                   bytes do not depend on it)\n"
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
          "  --weights DIR_OR_FILE\n"
          "                   put trained weights (a safetensors file, or a checkpoint folder with\n"
          "                   model.safetensors: finetune --full) in place of the model's tensors of the\n"
          "                   same names and shapes, rounded to their dtypes; same limits as --adapters\n"
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

/* The totals line; it names the target, so that which spelling gave which kind shows. */
static void print_totals(const fg_export_plan *p, const char *verb, const fg_export_target *tg) {
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
  if (tg->mode == FG_EXPORT_MODE_MIXTURE) printf("; llama-quantize mixture %s", fg_export_mixture_name(tg->ftype));
  else if (tg->mode == FG_EXPORT_MODE_DTYPE) printf("; single type %s", fg_dtype_name(tg->dtype));
  printf("\n");
}

static const char synopsis[] =
    "forgia export --from-gguf IN | --from-safetensors PATH --out OUT [options], or IN OUT [TYPE [NTHREADS]] [options]";

/* The positional form, as llama-quantize is called: IN OUT [MODE] into the flags' places. A
 * folder or a *.safetensors name is a safetensors source, anything else a GGUF (whose open
 * says clearly what it is not). */
static int take_positional(const fg_cli_spec *spec, const char *const pos[4], const char **from_gguf,
                           const char **from_st, const char **out, const char **dtype, bool *llama_type,
                           const char **threads) {
  if (!pos[0]) return FG_CLI_GO;
  if (pos[3] && *threads)
    return fg_cli_usage_error(spec, pos[3], "the thread count is given twice (positional and --threads)");
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
  *llama_type = pos[2] != NULL;
  if (pos[3]) *threads = pos[3];
  return FG_CLI_GO;
}

static int target_error(const fg_cli_spec *spec, const char *flag) {
  char problem[512];
  const char *m = fg_last_error();
  if (strncmp(m, "export: ", 8) == 0) m += 8; /* the command already says export */
  snprintf(problem, sizeof problem, "%s", m);
  return fg_cli_usage_error(spec, flag, "%s", problem);
}

static bool ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* --shard-size SIZE: bytes, or a number with a unit as Hugging Face writes them (KB MB GB TB
 * powers of 1000, KiB MiB GiB TiB powers of 1024, any case). */
static bool parse_size(const char *text, uint64_t *out) {
  static const struct {
    const char *unit;
    uint64_t mul;
  } units[] = {{"", 1},           {"b", 1},           {"kb", 1000ull},          {"mb", 1000000ull},
               {"gb", 1000000000ull}, {"tb", 1000000000000ull}, {"kib", 1ull << 10}, {"mib", 1ull << 20},
               {"gib", 1ull << 30}, {"tib", 1ull << 40}};
  size_t digits = strspn(text, "0123456789");
  if (digits == 0 || digits > 19) return false;
  char num[24];
  memcpy(num, text, digits);
  num[digits] = 0;
  uint64_t v;
  if (!fg_cli_parse_u64(num, 10, &v) || v == 0) return false;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(text + digits, units[i].unit) != 0) continue;
    if (v > UINT64_MAX / units[i].mul) return false;
    *out = v * units[i].mul;
    return true;
  }
  return false;
}

/* Whether a target fits a safetensors output: none, or a float type. */
static bool dense_target(const fg_export_target *t) {
  return t->mode == FG_EXPORT_MODE_UNSET || t->mode == FG_EXPORT_MODE_VERBATIM ||
         (t->mode == FG_EXPORT_MODE_DTYPE && (t->dtype == FG_F32 || t->dtype == FG_F16 || t->dtype == FG_BF16));
}

/* The output's name chooses its format (forgia help export): *.gguf GGUF, *.safetensors one
 * safetensors file, a folder with --shard-size a sharded safetensors folder; anything else is
 * refused before any work. out may be rewritten without trailing slashes. */
static int choose_format(const fg_cli_spec *spec, char **out, const char *shard, bool st_source,
                         fg_export_options *opt) {
  if (shard && !parse_size(shard, &opt->shard_bytes))
    return fg_cli_usage_error(spec, "--shard-size", "'%s': expected a size above 0 (bytes, or 500MB, 2GB, 1GiB, ...)",
                              shard);
  char *o = *out;
  for (size_t n = o ? strlen(o) : 0; n > 1 && o[n - 1] == '/'; n--) o[n - 1] = 0;
  struct stat sb;
  const bool is_dir = o && stat(o, &sb) == 0 && S_ISDIR(sb.st_mode);
  if (!o) {
    opt->format = shard ? FG_EXPORT_FORMAT_SAFETENSORS : FG_EXPORT_FORMAT_GGUF; /* a dry run without OUT */
  } else if (ends_with(o, ".gguf") && !is_dir) {
    if (shard)
      return fg_cli_usage_error(spec, "--shard-size", "writes a sharded safetensors folder; %s names a GGUF file", o);
    opt->format = FG_EXPORT_FORMAT_GGUF;
  } else if (ends_with(o, ".safetensors") && !is_dir) {
    if (shard)
      return fg_cli_usage_error(spec, "--shard-size", "writes a folder of shards; %s names one safetensors file "
                                "(give a folder path, or leave --shard-size out)", o);
    opt->format = FG_EXPORT_FORMAT_SAFETENSORS;
  } else if (shard) {
    opt->format = FG_EXPORT_FORMAT_SAFETENSORS;
  } else {
    return fg_cli_usage_error(spec, o, "the output's name chooses its format: *.gguf (GGUF), *.safetensors (one "
                              "safetensors file), or a folder with --shard-size SIZE (sharded safetensors)");
  }
  /* The F32, F16 and BF16 mixtures are one float type for every tensor they touch: where
   * the mixtures' GGUF rules cannot apply (a safetensors source or output), that single type. */
  const fg_dtype d = opt->dtype.dtype;
  if (opt->dtype.mode == FG_EXPORT_MODE_MIXTURE && (st_source || opt->format == FG_EXPORT_FORMAT_SAFETENSORS) &&
      (d == FG_F32 || d == FG_F16 || d == FG_BF16))
    opt->dtype = (fg_export_target){FG_EXPORT_MODE_DTYPE, d, 0};
  if (opt->format != FG_EXPORT_FORMAT_SAFETENSORS) return FG_CLI_GO;
  const char *const flags[4] = {"--dtype", "--experts-dtype", "--output-tensor-type", "--token-embedding-type"};
  const fg_export_target *const tg[4] = {&opt->dtype, &opt->experts, &opt->output_type, &opt->token_embd_type};
  for (int k = 0; k < 4; k++)
    if (!dense_target(tg[k]))
      return fg_cli_usage_error(spec, flags[k], "%s is %s; a safetensors output holds dense types only (give "
                                "f32, f16 or bf16, or write a .gguf)",
                                tg[k]->mode == FG_EXPORT_MODE_MIXTURE ? fg_export_mixture_name(tg[k]->ftype)
                                                                      : fg_dtype_name(tg[k]->dtype),
                                tg[k]->mode == FG_EXPORT_MODE_MIXTURE ? "a llama-quantize mixture" : "a block type");
  for (size_t i = 0; i < opt->n_tensor_types; i++) {
    const fg_export_target t = {FG_EXPORT_MODE_DTYPE, opt->tensor_types[i].dtype, 0};
    if (!dense_target(&t))
      return fg_cli_usage_error(spec, "--tensor-type", "%s is a block type; a safetensors output holds dense types "
                                "only", fg_dtype_name(t.dtype));
  }
  if (opt->keep_split) return fg_cli_usage_error(spec, "--keep-split", "writes GGUF parts, not safetensors");
  return FG_CLI_GO;
}

/* --adapters/--alpha: the merge mode (forgia/export_merge.h), its own run over the source;
 * weights (--weights) the same run putting trained weights in place. */
static int merge_mode(const fg_cli_spec *spec, const char *from_gguf, const char *from_st, const char *out,
                      const char *dtype, const char *experts, const char *adapters, const char *alpha,
                      const fg_export_options *opt, bool dry, bool weights) {
  const char *flag = weights ? "--weights" : "--adapters";
  if (weights && alpha) return fg_cli_usage_error(spec, "--alpha", "goes with --adapters, not --weights");
  if (!adapters) return fg_cli_usage_error(spec, "--alpha", "only with --adapters");
  if (!alpha && !weights)
    return fg_cli_usage_error(spec, "--alpha", "required with --adapters (the file stores A and B, not alpha)");
  if (dtype || experts)
    return fg_cli_usage_error(spec, dtype ? "--dtype" : "--experts-dtype",
                              "not with %s (write the model's dtypes, then quantize in a second run)", flag);
  if (from_st) return fg_cli_usage_error(spec, flag, "writes into a GGUF model (--from-gguf)");
  if (out && !ends_with(out, ".gguf")) return fg_cli_usage_error(spec, flag, "writes GGUF; OUT must end in .gguf");
  char *end;
  errno = 0;
  const float a = weights ? 1.0f : strtof(alpha, &end);
  if (!weights && (*end || end == alpha || errno || !isfinite(a)))
    return fg_cli_usage_error(spec, "--alpha", "'%s': expected a finite number", alpha);
  fg_cli_signals_catch();
  fg_ckpt *src = NULL;
  fg_export_merge *m = NULL;
  fg_status st;
  const int open_rc = fg_cli_export_open(from_gguf, FG_CKPT_GGUF, NULL, out, &src);
  if (open_rc) return open_rc;
  const fg_export_merge_options mo = {.adapters = adapters, .alpha = a, .chunk_bytes = opt->chunk_bytes,
                                      .weights = weights};
  int rc = 0;
  if ((st = fg_export_merge_create(src, &mo, &m))) {
    fg_cli_report("export", adapters);
    fg_ckpt_close(src);
    return 1;
  }
  for (size_t i = 0; i < fg_export_merge_count(m); i++) {
    uint32_t r;
    const char *base = fg_export_merge_base(m, i, &r);
    printf(weights ? "replace " : "merge ");
    fg_cli_puts_escaped(stdout, base, 0);
    if (weights) printf("\n");
    else printf(" (rank %" PRIu32 ", scale %g)\n", r, (double)(a / (float)r));
  }
  if (!dry) {
    run_ctx ctx = {.last_done = 0};
    uint64_t total = 0; /* a merge keeps every tensor's type, so the output's bytes are the source's */
    for (size_t i = 0; i < fg_ckpt_count(src); i++) total += fg_ckpt_tensor_at(src, i)->nbytes;
    fg_cli_progress_init(&ctx.bar, false, "tensors", fg_ckpt_count(src), total);
    st = fg_export_merge_run(m, out, on_progress, &ctx);
    fg_cli_progress_clear(&ctx.bar);
    if (st && fg_cli_signal_caught()) {
      rc = fg_cli_interrupted("export", out);
    } else if (st) {
      fg_cli_report("export", out);
      rc = 1;
    } else {
      char rss[32];
      printf(weights ? "put %zu trained weights from " : "merged %zu LoRA adapters from ", fg_export_merge_count(m));
      fg_cli_puts_escaped(stdout, fg_export_merge_path(m), 0);
      if (weights) printf(" into ");
      else printf(" (alpha %g) into ", (double)a);
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
                       const char *from_st, char *out, const char *dtype, const char *experts,
                       const char *chunk, const char *adapters, const char *alpha, const char *out_type,
                       const char *embd_type, bool dry, bool pure, bool requant, bool leave_output,
                       bool keep_split, bool llama_type, int threads, const char *shard) {
  const fg_cli_spec spec = *specp;
  int rc;
  if (!from_gguf == !from_st)
    return fg_cli_usage_error(&spec, NULL, "give exactly one of --from-gguf and --from-safetensors");
  if (!out && !dry) return fg_cli_usage_error(&spec, "--out", "missing (or give --dry-run)");
  fg_export_options opt = {0};
  /* the library's message names the bad target and lists the good ones */
  /* --dtype spells types as Fucina's export does, the positional TYPE as llama-quantize does */
  if (dtype && fg_export_target_parse_as(dtype, llama_type ? FG_EXPORT_SPELLING_LLAMA : FG_EXPORT_SPELLING_DTYPE,
                                         &opt.dtype))
    return target_error(&spec, llama_type ? dtype : "--dtype");
  if (experts && fg_export_target_parse_as(experts, FG_EXPORT_SPELLING_DTYPE, &opt.experts))
    return target_error(&spec, "--experts-dtype");
  opt.threads = threads;
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
  if ((rc = choose_format(&spec, &out, shard, from_st != NULL, &opt)) != FG_CLI_GO) return rc;
  if (opt.dtype.mode == FG_EXPORT_MODE_MIXTURE && from_st)
    return fg_cli_usage_error(&spec, llama_type ? dtype : "--dtype",
                              "llama-quantize mixture %s reads a GGUF model's metadata and tensor names; "
                              "this source is safetensors: give --dtype %s for the single type, or export "
                              "to GGUF first and quantize that", fg_export_mixture_name(opt.dtype.ftype),
                              fg_dtype_name(opt.dtype.dtype));
  if (chunk) {
    char *end;
    errno = 0;
    unsigned long long mib = strtoull(chunk, &end, 10);
    if (*end || end == chunk || errno || chunk[0] == '-' || mib == 0 || mib > (1ull << 20))
      return fg_cli_usage_error(&spec, "--chunk-mib", "'%s': expected 1..1048576", chunk);
    opt.chunk_bytes = (uint64_t)mib << 20;
  }
  if ((adapters || alpha) && opt.format != FG_EXPORT_FORMAT_GGUF)
    return fg_cli_usage_error(&spec, "--adapters", "merges into a GGUF model; OUT must end in .gguf");
  if (adapters || alpha) return merge_mode(&spec, from_gguf, from_st, out, dtype, experts, adapters, alpha, &opt, dry, false);
  fg_cli_signals_catch();
  rc = 0;

  const char *in = from_gguf ? from_gguf : from_st;
  fg_ckpt *src = NULL;
  fg_export_plan *plan = NULL;
  const fg_ckpt_format want = from_gguf ? FG_CKPT_GGUF : FG_CKPT_SAFETENSORS;
  fg_status st;
  const bool folder = opt.shard_bytes > 0;
  rc = fg_cli_export_open(in, want, from_gguf ? "--from-safetensors" : "--from-gguf", folder ? NULL : out, &src);
  if (rc) return rc;
  if (folder && out && (st = fg_export_check_output_folder(src, out)) != FG_OK) {
    fg_cli_report("export", out);
    fg_ckpt_close(src);
    return st == FG_ERR_INVALID_ARG ? 2 : 1;
  }
  st = fg_export_plan_create(src, &opt, &plan);

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
    print_totals(plan, "plan:", &opt.dtype);
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
      print_totals(plan, "wrote", &opt.dtype);
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
  const char *threads = NULL, *shard = NULL, *weights = NULL;
  bool dry = false, pure = false, requant = false, leave_output = false, keep_split = false, llama_type = false;
  const fg_cli_opt opts[] = {{"--from-gguf", &from_gguf, NULL}, {"--from-safetensors", &from_st, NULL},
                             {"--out", &out, NULL},             {"--dtype", &dtype, NULL},
                             {"--experts-dtype", &experts, NULL}, {"--chunk-mib", &chunk, NULL},
                             {"--dry-run", NULL, &dry},         {"--adapters", &adapters, NULL},
                             {"--alpha", &alpha, NULL},         {"--pure", NULL, &pure},
                             {"--allow-requantize", NULL, &requant}, {"--leave-output-tensor", NULL, &leave_output},
                             {"--output-tensor-type", &out_type, NULL}, {"--token-embedding-type", &embd_type, NULL},
                             {"--imatrix", &imatrix, NULL},     {"--keep-split", NULL, &keep_split},
                             {"--threads", &threads, NULL},     {"--shard-size", &shard, NULL},
                             {"--weights", &weights, NULL}};
  static const char *const pos_names[4] = {"IN", "OUT", "TYPE", "NTHREADS"};
  const char *pos[4] = {NULL, NULL, NULL, NULL};
  const fg_cli_spec spec = {"export", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, pos, 4, 4, 0};
  fg_ptqtp_cli ptqtp; /* --ptqtp* flags are taken out first (tools/util_ptqtp.h) */
  fg_tensor_types_cli tt = {0};
  int rc = fg_ptqtp_cli_take(&spec, &argc, argv, &ptqtp);
  if (rc == FG_CLI_GO) rc = fg_tensor_types_cli_take(&spec, &argc, argv, &tt);
  if (rc == FG_CLI_GO) rc = fg_cli_parse(&spec, argc, argv);
  if (rc == FG_CLI_GO) rc = take_positional(&spec, pos, &from_gguf, &from_st, &out, &dtype, &llama_type, &threads);
  /* every mode's parallel loops (the merge's, --ptqtp's solver) take it from OpenMP, which
   * fg_cli_threads_as sets; the transcode also gets it in its options */
  unsigned nthreads = 0;
  if (rc == FG_CLI_GO) rc = fg_cli_threads_as(&spec, pos[3] ? "NTHREADS" : "--threads", threads, &nthreads);
  if (rc != FG_CLI_GO) {
    fg_ptqtp_cli_free(&ptqtp);
    fg_tensor_types_cli_free(&tt);
    return rc;
  }
  if (ptqtp.on && (shard || (out && !ends_with(out, ".gguf")))) {
    fg_ptqtp_cli_free(&ptqtp);
    fg_tensor_types_cli_free(&tt);
    return fg_cli_usage_error(&spec, shard ? "--shard-size" : out, "--ptqtp writes GGUF: OUT must end in .gguf");
  }
  if (ptqtp.on) {
    fg_tensor_types_cli_free(&tt);
    return fg_ptqtp_cli_main(&spec, &ptqtp, from_gguf, from_st, out, dry);
  }
  fg_imatrix *im = NULL;
  char *out_copy = out ? strdup(out) : NULL; /* choose_format drops trailing slashes */
  if (out && !out_copy) {
    rc = fg_cli_usage_error(&spec, "--out", "out of memory");
  } else if (imatrix && (adapters || alpha || weights)) {
    rc = fg_cli_usage_error(&spec, "--imatrix", "not with --adapters or --weights");
  } else if (weights && adapters) {
    rc = fg_cli_usage_error(&spec, "--weights", "not with --adapters (merge the adapters in a run of their own)");
  } else if (weights) {
    const fg_export_options wo = {0};
    if (!out) rc = fg_cli_usage_error(&spec, "--out", "missing: the output path");
    else rc = merge_mode(&spec, from_gguf, from_st, out, dtype, experts, weights, alpha, &wo, dry, true);
  } else if (imatrix && fg_imatrix_open(imatrix, &im)) {
    fg_cli_report("export", imatrix);
    rc = 1;
  } else {
    rc = export_main(&spec, &tt, im, imatrix, from_gguf, from_st, out_copy, dtype, experts, chunk, adapters, alpha,
                     out_type, embd_type, dry, pure, requant, leave_output, keep_split, llama_type,
                     (int)nthreads, shard);
  }
  free(out_copy);
  fg_imatrix_close(im);
  fg_tensor_types_cli_free(&tt);
  return rc;
}

