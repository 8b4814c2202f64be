/* forgia inspect: the header of a GGUF file (or split) or a safetensors file/folder, as a
 * readable summary or one JSON object. Only header pages are read. Training checkpoint
 * directories are inspect_dir.c's, lone files of other kinds inspect_files.c's. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "inspect.h"
#include "inspect_dir.h"
#include "inspect_shape.h"
#include "inspect_stream.h"
#include "util_args.h"
#include "util_json.h"
#include "util_report.h"
#include "util_text.h"

const char fg_cmd_inspect_summary[] =
    "show what a model, training checkpoint, optimizer frame, imatrix or JSON file holds";

#define ARRAY_SUMMARY_LIMIT 64

static void usage(FILE *f) {
  fprintf(f,
          "usage: forgia inspect PATH [--json] [--full] [--ne]\n\n"
          "PATH: a GGUF file, part 1 of a split GGUF (NAME-00001-of-0000N.gguf), a .safetensors\n"
          "file, a model.safetensors.index.json, a Hugging Face folder, or a training checkpoint\n"
          "directory (trainer_state.json, model.safetensors or adapters.safetensors,\n"
          "optimizer.fucina): whether it is committed, the trainer state, the tensors and the\n"
          "optimizer's frames (kind, version, step, slots).\n"
          "A lone file is told by its first bytes: an optimizer frame (optimizer.fucina, magic\n"
          "FZ..), a trainer_state.json, a Hugging Face tokenizer.json (model, vocab, merges,\n"
          "added tokens) or config.json (model_type, keys), any other JSON (its top-level keys),\n"
          "an imatrix (legacy .dat, or a GGUF with imatrix.* keys: entries, chunks, datasets).\n"
          "Any other file is one error line saying what its first bytes are.\n\n"
          "Shapes are row-major, outermost dimension first, as safetensors, numpy and torch\n"
          "write them: a 262144 x 640 embedding is [262144, 640]. GGUF's ne, which llama.cpp\n"
          "prints, is the same list reversed (innermost first): 640, 262144.\n"
          "  --json  one JSON object; its \"format\" says which kind: gguf, safetensors,\n"
          "          training_checkpoint, optimizer_frame, trainer_state, hf_tokenizer,\n"
          "          hf_config, json, imatrix. For models: version and alignment (GGUF), metadata\n"
          "          (key -> {type, value}), tensors [{name, dtype, shape, offset, nbytes}]\n"
          "          (written one tensor at a time: memory stays that of the header)\n"
          "  --full  arrays of more than %d elements in full (summarised otherwise);\n"
          "          without --json, also list every tensor (and every entry of long lists)\n"
          "  --ne    shapes of tensors in GGUF ne order: instead of the shape in the readable\n"
          "          output; in --json as \"ne\" next to \"shape\" (which never changes)\n",
          ARRAY_SUMMARY_LIMIT);
}

/* ---------------------------------------------------------------- JSON */

static cJSON *gguf_scalar(const fg_gguf_array *a, uint64_t j) {
  int64_t iv;
  uint64_t uv;
  double fv;
  bool bv;
  fg_gguf_str sv;
  switch (a->elem_type) {
    case FG_GGUF_FLOAT32:
    case FG_GGUF_FLOAT64:
      return fg_gguf_array_float(a, j, &fv) ? NULL : fg_cli_json_f64(fv);
    case FG_GGUF_BOOL:
      return fg_gguf_array_bool(a, j, &bv) ? NULL : cJSON_CreateBool(bv);
    case FG_GGUF_STRING:
      return fg_gguf_array_str(a, j, &sv) ? NULL : fg_cli_json_bytes(sv.ptr, (size_t)sv.len);
    case FG_GGUF_UINT64:
      return fg_gguf_array_uint(a, j, &uv) ? NULL : fg_cli_json_u64(uv);
    default:
      return fg_gguf_array_int(a, j, &iv) ? NULL : fg_cli_json_i64(iv);
  }
}

static cJSON *gguf_value(const fg_gguf_file *f, uint64_t i, bool full) {
  cJSON *o = cJSON_CreateObject();
  fg_gguf_type t = fg_gguf_kv_type(f, i);
  cJSON_AddStringToObject(o, "type", fg_gguf_type_name(t));
  int64_t iv;
  uint64_t uv;
  double fv;
  bool bv;
  fg_gguf_str sv;
  fg_gguf_array a;
  cJSON *v = NULL;
  switch (t) {
    case FG_GGUF_FLOAT32:
    case FG_GGUF_FLOAT64:
      if (!fg_gguf_kv_float(f, i, &fv)) v = fg_cli_json_f64(fv);
      break;
    case FG_GGUF_BOOL:
      if (!fg_gguf_kv_bool(f, i, &bv)) v = cJSON_CreateBool(bv);
      break;
    case FG_GGUF_STRING:
      if (!fg_gguf_kv_str(f, i, &sv)) v = fg_cli_json_bytes(sv.ptr, (size_t)sv.len);
      break;
    case FG_GGUF_ARRAY:
      if (fg_gguf_kv_array(f, i, &a)) break;
      cJSON_AddStringToObject(o, "element_type", fg_gguf_type_name(a.elem_type));
      cJSON_AddItemToObject(o, "length", fg_cli_json_u64(a.len));
      if (a.len > ARRAY_SUMMARY_LIMIT && !full) return o; /* summarised: length + type */
      v = cJSON_CreateArray();
      for (uint64_t j = 0; v && j < a.len; j++) {
        cJSON *e = gguf_scalar(&a, j);
        if (!e) {
          cJSON_Delete(v);
          v = NULL;
          break;
        }
        cJSON_AddItemToArray(v, e);
      }
      break;
    case FG_GGUF_UINT64:
      if (!fg_gguf_kv_uint(f, i, &uv)) v = fg_cli_json_u64(uv);
      break;
    default:
      if (!fg_gguf_kv_int(f, i, &iv)) v = fg_cli_json_i64(iv);
      break;
  }
  if (!v) {
    cJSON_Delete(o);
    return NULL;
  }
  cJSON_AddItemToObject(o, "value", v);
  return o;
}

static cJSON *tensor_json(const char *name, size_t name_len, const char *dtype, const uint64_t *shape, int ndim,
                          uint64_t offset, uint64_t nbytes, bool ne) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "name", fg_cli_json_bytes(name, name_len));
  cJSON_AddStringToObject(o, "dtype", dtype);
  cJSON_AddItemToObject(o, "shape", fg_cli_shape_json(shape, ndim, false));
  if (ne) cJSON_AddItemToObject(o, "ne", fg_cli_shape_json(shape, ndim, true));
  cJSON_AddItemToObject(o, "offset", fg_cli_json_u64(offset));
  cJSON_AddItemToObject(o, "nbytes", fg_cli_json_u64(nbytes));
  return o;
}

static int cmp_spelling(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* JSON spells byte strings apart except invalid UTF-8, every byte of which reads as U+FFFD:
 * two GGUF keys that differ only there would print as one key twice. Returns the first
 * spelling shared by two keys (malloc'd), NULL when none is; *nomem on failure. */
static char *shared_spelling(const fg_gguf_file *f, bool *nomem) {
  size_t n = fg_gguf_kv_count(f);
  char **sp = calloc(n ? n : 1, sizeof *sp), *dup = NULL;
  *nomem = !sp;
  for (size_t i = 0; sp && i < n && !*nomem; i++) {
    fg_gguf_str k = fg_gguf_kv_key(f, i);
    cJSON *q = fg_cli_json_bytes(k.ptr, (size_t)k.len);
    sp[i] = q ? strdup(q->valuestring) : NULL;
    *nomem = !sp[i];
    cJSON_Delete(q);
  }
  if (sp && !*nomem) {
    qsort(sp, n, sizeof *sp, cmp_spelling);
    for (size_t i = 1; i < n && !dup; i++)
      if (!strcmp(sp[i - 1], sp[i])) dup = strdup(sp[i]);
  }
  for (size_t i = 0; sp && i < n; i++) free(sp[i]);
  free(sp);
  return dup;
}

static cJSON *gguf_json(const fg_gguf_file *f, bool full) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "gguf");
  cJSON_AddNumberToObject(root, "version", fg_gguf_version(f));
  cJSON_AddNumberToObject(root, "alignment", fg_gguf_alignment(f));
  /* keys are bytes from the file: escaped like names and values, not by cJSON */
  fg_cli_json_obj meta = {0};
  for (uint64_t i = 0; i < fg_gguf_kv_count(f); i++) {
    fg_gguf_str k = fg_gguf_kv_key(f, i);
    fg_cli_json_obj_add(&meta, k.ptr, (size_t)k.len, gguf_value(f, i, full));
  }
  cJSON *m = fg_cli_json_obj_finish(&meta);
  if (!m) {
    cJSON_Delete(root);
    return NULL;
  }
  cJSON_AddItemToObject(root, "metadata", m);
  return root; /* the tensors follow, streamed (gguf_tensor_json) */
}

typedef struct tensors_ctx {
  const fg_ckpt *c;
  bool ne;
} tensors_ctx;

static cJSON *gguf_tensor_json(void *ctx, size_t i) {
  const tensors_ctx *x = ctx;
  const fg_gguf_file *f = fg_ckpt_gguf(x->c);
  const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
  cJSON *o = tensor_json(t->name, t->name_len, fg_dtype_name(t->dtype), t->shape, (int)t->ndim, t->offset, t->nbytes,
                         x->ne);
  if (o && fg_gguf_part_count(f) > 1) cJSON_AddNumberToObject(o, "part", t->part);
  return o;
}

static cJSON *st_json(const fg_st_dir *d) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "safetensors");
  /* shards written together carry the same __metadata__; show the first shard's */
  const fg_st_file *first = fg_st_dir_shard(d, 0);
  /* by length: keys and values may hold NUL bytes (keys that differ after one are distinct
   * keys, and JSON spells them apart) */
  fg_cli_json_obj mo = {0};
  for (size_t i = 0; i < fg_st_metadata_count(first); i++) {
    const char *k, *v;
    size_t kl, vl;
    fg_st_metadata_at_n(first, i, &k, &kl, &v, &vl);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "string");
    cJSON_AddItemToObject(o, "value", fg_cli_json_bytes(v, vl));
    fg_cli_json_obj_add(&mo, k, kl, o);
  }
  cJSON *meta = fg_cli_json_obj_finish(&mo);
  if (!meta) {
    cJSON_Delete(root);
    return NULL;
  }
  cJSON_AddItemToObject(root, "metadata", meta);
  size_t nshards = fg_st_dir_shard_count(d);
  if (nshards > 1) {
    cJSON *sh = cJSON_AddArrayToObject(root, "shards");
    for (size_t i = 0; i < nshards; i++) cJSON_AddItemToArray(sh, cJSON_CreateString(fg_st_dir_shard_name(d, i)));
    cJSON_AddItemToObject(root, "total_size", fg_cli_json_u64(fg_st_dir_total_size(d)));
  }
  return root; /* the tensors follow, streamed (st_tensor_json) */
}

static cJSON *st_tensor_json(void *ctx, size_t i) {
  const tensors_ctx *x = ctx;
  const fg_st_dir *d = fg_ckpt_safetensors(x->c);
  size_t shard;
  const fg_st_tensor *t = fg_st_dir_tensor_at(d, i, &shard);
  cJSON *o = tensor_json(t->name, t->name_len, fg_dtype_info(t->dtype)->st_tag, t->shape, t->ndim, t->begin,
                         t->nbytes, x->ne);
  if (o && fg_st_dir_shard_count(d) > 1) cJSON_AddStringToObject(o, "file", fg_st_dir_shard_name(d, shard));
  return o;
}

/* ---------------------------------------------------------------- summary */

typedef struct hist {
  const char *dtype;
  uint64_t count, bytes;
} hist;

static void hist_add(hist *h, size_t *n, const char *dtype, uint64_t bytes) {
  for (size_t i = 0; i < *n; i++) {
    if (strcmp(h[i].dtype, dtype) == 0) {
      h[i].count++;
      h[i].bytes += bytes;
      return;
    }
  }
  h[*n] = (hist){dtype, 1, bytes};
  (*n)++;
}

static const char *human(uint64_t b, char *buf, size_t n) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double x = (double)b;
  int k = 0;
  while (x >= 1024 && k < 5) x /= 1024, k++;
  snprintf(buf, n, k ? "%.2f %s" : "%.0f %s", x, u[k]);
  return buf;
}

/* A value cut to its first 60 bytes (an escape or a character is never split). */
static void print_bytes_short(const char *s, size_t n) {
  char buf[60 * 4 + 1];
  size_t shown = n > 60 ? 60 : n;
  fg_cli_escape_into(buf, sizeof buf, s, shown);
  fputs(buf, stdout);
  if (shown < n) printf("... (%zu bytes)", n);
}

static int summary(const char *path, const fg_ckpt *c, bool full, bool ne) {
  size_t nt = fg_ckpt_count(c);
  hist *h = calloc(nt ? nt : 1, sizeof *h);
  if (!h) return 1;
  size_t nh = 0;
  uint64_t total = 0;
  char b1[32];
  if (fg_ckpt_gguf(c)) {
    const fg_gguf_file *f = fg_ckpt_gguf(c);
    fg_cli_puts_escaped(stdout, path, 0);
    printf(": GGUF v%u, alignment %u, %llu metadata keys, %zu tensors", fg_gguf_version(f),
           fg_gguf_alignment(f), (unsigned long long)fg_gguf_kv_count(f), nt);
    if (fg_gguf_part_count(f) > 1) printf(", %zu parts", fg_gguf_part_count(f));
    printf("\nmetadata:\n");
    for (uint64_t i = 0; i < fg_gguf_kv_count(f); i++) {
      fg_gguf_str k = fg_gguf_kv_key(f, i);
      fg_gguf_type t = fg_gguf_kv_type(f, i);
      printf("  ");
      fg_cli_put_escaped(stdout, k.ptr, (size_t)k.len, 40);
      printf(" %-8s ", fg_gguf_type_name(t));
      fg_gguf_str sv;
      fg_gguf_array a;
      int64_t iv;
      uint64_t uv;
      double fv;
      bool bv;
      if (t == FG_GGUF_STRING && !fg_gguf_kv_str(f, i, &sv)) print_bytes_short(sv.ptr, (size_t)sv.len);
      else if (t == FG_GGUF_ARRAY && !fg_gguf_kv_array(f, i, &a))
        printf("[%llu x %s]", (unsigned long long)a.len, fg_gguf_type_name(a.elem_type));
      else if (t == FG_GGUF_BOOL && !fg_gguf_kv_bool(f, i, &bv)) printf("%s", bv ? "true" : "false");
      else if ((t == FG_GGUF_FLOAT32 || t == FG_GGUF_FLOAT64) && !fg_gguf_kv_float(f, i, &fv)) printf("%.9g", fv);
      else if (t == FG_GGUF_UINT64 && !fg_gguf_kv_uint(f, i, &uv)) printf("%llu", (unsigned long long)uv);
      else if (!fg_gguf_kv_int(f, i, &iv)) printf("%lld", (long long)iv);
      printf("\n");
    }
    if (full) printf("tensors (%s):\n", fg_cli_shape_label(ne));
    for (size_t i = 0; i < nt; i++) {
      const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
      hist_add(h, &nh, fg_dtype_name(t->dtype), t->nbytes);
      total += t->nbytes;
      if (full) {
        printf("  ");
        fg_cli_put_escaped(stdout, t->name, t->name_len, 48);
        printf(" %-8s ", fg_dtype_name(t->dtype));
        fg_cli_print_shape(stdout, t->shape, (int)t->ndim, ne);
        printf("  offset %llu, %llu bytes\n", (unsigned long long)t->offset, (unsigned long long)t->nbytes);
      }
    }
  } else {
    const fg_st_dir *d = fg_ckpt_safetensors(c);
    const fg_st_file *first = fg_st_dir_shard(d, 0);
    fg_cli_puts_escaped(stdout, path, 0);
    printf(": safetensors, %zu tensors", nt);
    if (fg_st_dir_shard_count(d) > 1) printf(", %zu shards", fg_st_dir_shard_count(d));
    printf("\nmetadata:%s\n", fg_st_metadata_count(first) ? "" : " (none)");
    for (size_t i = 0; i < fg_st_metadata_count(first); i++) {
      /* with lengths: keys and values may hold NUL bytes, shown escaped like any control */
      const char *k, *v;
      size_t kl, vl;
      fg_st_metadata_at_n(first, i, &k, &kl, &v, &vl);
      printf("  ");
      fg_cli_put_escaped(stdout, k, kl, 40);
      printf(" ");
      print_bytes_short(v, vl);
      printf("\n");
    }
    if (full) printf("tensors (%s):\n", fg_cli_shape_label(ne));
    for (size_t i = 0; i < nt; i++) {
      size_t shard;
      const fg_st_tensor *t = fg_st_dir_tensor_at(d, i, &shard);
      const char *tag = fg_dtype_info(t->dtype)->st_tag;
      hist_add(h, &nh, tag, t->nbytes);
      total += t->nbytes;
      if (full) {
        printf("  ");
        fg_cli_put_escaped(stdout, t->name, t->name_len, 48);
        printf(" %-8s ", tag);
        fg_cli_print_shape(stdout, t->shape, t->ndim, ne);
        printf("  offset %llu, %llu bytes", (unsigned long long)t->begin, (unsigned long long)t->nbytes);
        if (fg_st_dir_shard_count(d) > 1) {
          printf(" (");
          fg_cli_puts_escaped(stdout, fg_st_dir_shard_name(d, shard), 0);
          printf(")");
        }
        printf("\n");
      }
    }
  }
  printf("dtypes:\n");
  for (size_t i = 0; i < nh; i++)
    printf("  %-12s %8llu tensors  %12s\n", h[i].dtype, (unsigned long long)h[i].count,
           human(h[i].bytes, b1, sizeof b1));
  printf("total: %zu tensors, %llu bytes (%s)\n", nt, (unsigned long long)total, human(total, b1, sizeof b1));
  free(h);
  return 0;
}

int fg_cmd_inspect(int argc, char **argv) {
  const char *path = NULL;
  fg_cli_inspect_opts o = {0};
  const fg_cli_opt opts[] = {{"--json", NULL, &o.json}, {"--full", NULL, &o.full}, {"--ne", NULL, &o.ne}};
  static const char *const pos_names[] = {"PATH"};
  const fg_cli_spec spec = {"inspect", "forgia inspect PATH [--json] [--full] [--ne]", usage, opts, 3, pos_names,
                            &path, 1, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  if (fg_cli_is_train_dir(path)) return fg_cli_inspect_train_dir(path, &o); /* inspect_dir.c */
  if ((rc = fg_cli_inspect_file(path, &o)) >= 0) return rc;                 /* inspect_files.c */
  fg_ckpt *c = NULL;
  if (fg_ckpt_open(path, &c) != FG_OK) {
    fg_cli_report("inspect", path);
    return 1;
  }
  if (fg_ckpt_gguf(c) && fg_cli_gguf_is_imatrix(fg_ckpt_gguf(c))) {
    fg_ckpt_close(c);
    return fg_cli_inspect_imatrix(path, &o); /* inspect_imatrix.c */
  }
  rc = 0;
  bool nomem = false;
  char *dup = o.json && fg_ckpt_gguf(c) ? shared_spelling(fg_ckpt_gguf(c), &nomem) : NULL;
  if (dup) {
    fg_cli_fail("inspect", path, "two metadata keys differ only in invalid UTF-8 bytes and would both print as %s in "
                "JSON (the summary without --json shows them apart)", dup);
    free(dup);
    rc = 1;
  } else if (o.json) {
    tensors_ctx x = {c, o.ne};
    const fg_gguf_file *g = fg_ckpt_gguf(c);
    cJSON *root = nomem ? NULL : g ? gguf_json(g, o.full) : st_json(fg_ckpt_safetensors(c));
    rc = fg_cli_json_print_streamed("inspect", path, root, "tensors", fg_ckpt_count(c),
                                    g ? gguf_tensor_json : st_tensor_json, &x);
  } else if (summary(path, c, o.full, o.ne) != 0) {
    fg_cli_fail("inspect", path, "out of memory");
    rc = 1;
  }
  fg_ckpt_close(c);
  return rc; /* main checks that stdout took it all */
}
