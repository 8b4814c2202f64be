/* forgia cat: one tensor's bytes to stdout, raw or decoded to little-endian f32. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/quant.h"
#include "util_args.h"
#include "util_report.h"
#include "util_signal.h"

const char fg_cmd_cat_summary[] = "write one tensor's raw bytes, or its values as little-endian f32, to stdout";

static void usage(FILE *f) {
  fprintf(f,
          "usage: forgia cat PATH TENSOR [--as f32]\n\n"
          "PATH is a GGUF file (or part 1 of a split), a safetensors file or a Hugging Face folder.\n"
          "Without --as the tensor's stored bytes are written unchanged; --as f32 decodes\n"
          "f32, f16, bf16 and f64 tensors, and ggml block types, to little-endian f32.\n"
          "TENSOR is any name the file holds, \"\" included (safetensors allows an empty name).\n"
          "The output is binary either way, so stdout must not be a terminal: redirect it to a\n"
          "file or a pipe.\n");
}

/* The tensor as cat sees it, whichever container holds it. */
typedef struct cat_tensor {
  const char *name;
  const char *path;      /* its file, as messages name it */
  fg_dtype dtype;
  const fg_mapping *map; /* the file holding the bytes: read with fg_mapping_copy */
  uint64_t offset;       /* of the bytes in map */
  uint64_t nbytes;
  uint64_t numel;
  uint64_t row;        /* elements per row (innermost dimension; 1 for a scalar) */
} cat_tensor;

static uint64_t le_bytes(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* Copies t's bytes [off, off+len) into dst. The file may have been truncated since it was
 * opened: fg_mapping_copy makes that a status (not SIGBUS), said here with the tensor. */
static fg_status read_bytes(const cat_tensor *t, uint64_t off, uint64_t len, void *dst) {
  fg_status s = fg_mapping_copy(t->map, dst, t->offset + off, len);
  if (!s) return FG_OK;
  const char *mp = fg_mapping_path(t->map), *m = fg_last_error();
  size_t n = strlen(mp);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", strncmp(m, mp, n) == 0 && m[n] == ':' && m[n + 1] == ' ' ? m + n + 2 : m);
  return fg_fail(s, "%s: tensor '%s' (its bytes %llu..%llu of %llu): %s", t->path, t->name, (unsigned long long)off,
                 (unsigned long long)(off + len), (unsigned long long)t->nbytes, msg);
}

/* Decodes nr rows stored at src into out. Scalar float types convert element by element;
 * any type the quant codecs decode goes through fg_quant_decode_rows. */
static fg_status decode_rows(const cat_tensor *t, const uint8_t *src, uint64_t nr, float *out) {
  uint64_t n = nr * t->row;
  switch (t->dtype) {
    case FG_F32:
      for (uint64_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)le_bytes(src + 4 * i, 4);
        memcpy(&out[i], &u, 4);
      }
      return FG_OK;
    case FG_F16:
      for (uint64_t i = 0; i < n; i++) out[i] = fg_f16_to_f32((uint16_t)le_bytes(src + 2 * i, 2));
      return FG_OK;
    case FG_BF16:
      for (uint64_t i = 0; i < n; i++) out[i] = fg_bf16_to_f32((uint16_t)le_bytes(src + 2 * i, 2));
      return FG_OK;
    case FG_F64:
      for (uint64_t i = 0; i < n; i++) {
        uint64_t u = le_bytes(src + 8 * i, 8);
        double d;
        memcpy(&d, &u, 8);
        out[i] = (float)d;
      }
      return FG_OK;
    default:
      break;
  }
  if (fg_quant_can_decode(t->dtype)) {
    uint64_t row_bytes = t->nbytes / (t->numel / t->row);
    return fg_quant_decode_rows(t->dtype, src, (size_t)(nr * row_bytes), out, (int64_t)nr, (int64_t)t->row);
  }
  return fg_fail(FG_ERR_UNSUPPORTED, "cannot decode %s to f32", fg_dtype_name(t->dtype));
}

static bool can_decode(fg_dtype d) {
  return d == FG_F32 || d == FG_F16 || d == FG_BF16 || d == FG_F64 || fg_quant_can_decode(d);
}

static int write_f32(const cat_tensor *t) {
  if (t->numel == 0) return 0;
  uint64_t nrows = t->numel / t->row;
  /* about 1M values per chunk, whole rows */
  uint64_t chunk = t->row >= (1u << 20) ? 1 : (1u << 20) / t->row;
  if (chunk > nrows) chunk = nrows;
  uint64_t row_bytes = t->nbytes / nrows;
  float *buf = malloc((size_t)(chunk * t->row) * sizeof *buf);
  uint8_t *le = malloc((size_t)(chunk * t->row) * 4);
  uint8_t *raw = malloc((size_t)(chunk * row_bytes) + 1);
  if (!buf || !le || !raw) {
    free(buf);
    free(le);
    free(raw);
    fg_fail(FG_ERR_NOMEM, "out of memory for a %llu-value chunk", (unsigned long long)(chunk * t->row));
    return 1;
  }
  int rc = 0;
  for (uint64_t r = 0; r < nrows && !rc && !fg_cli_signal_caught(); r += chunk) {
    uint64_t nr = nrows - r < chunk ? nrows - r : chunk;
    if (read_bytes(t, r * row_bytes, nr * row_bytes, raw) != FG_OK || decode_rows(t, raw, nr, buf) != FG_OK) {
      rc = 1;
      break;
    }
    for (uint64_t i = 0; i < nr * t->row; i++) {
      uint32_t u;
      memcpy(&u, &buf[i], 4);
      for (int b = 0; b < 4; b++) le[4 * i + (uint64_t)b] = (uint8_t)(u >> (8 * b));
    }
    if (fwrite(le, 4, (size_t)(nr * t->row), stdout) != nr * t->row) {
      fg_fail(FG_ERR_IO, "stdout: write failed: %s", strerror(errno));
      rc = 1;
    }
  }
  free(buf);
  free(le);
  free(raw);
  return rc;
}

/* The stored bytes unchanged, copied out of the mapping a piece at a time. */
static int write_raw(const cat_tensor *t) {
  const uint64_t piece = (uint64_t)4 << 20;
  uint8_t *buf = t->nbytes ? malloc((size_t)(t->nbytes < piece ? t->nbytes : piece)) : NULL;
  if (t->nbytes && !buf) {
    fg_fail(FG_ERR_NOMEM, "out of memory for a %llu-byte buffer", (unsigned long long)piece);
    return 1;
  }
  int rc = 0;
  for (uint64_t off = 0; off < t->nbytes && !rc && !fg_cli_signal_caught(); off += piece) {
    uint64_t n = t->nbytes - off < piece ? t->nbytes - off : piece;
    if (read_bytes(t, off, n, buf) != FG_OK) {
      rc = 1;
    } else if (fwrite(buf, 1, (size_t)n, stdout) != n) {
      fg_fail(FG_ERR_IO, "stdout: write failed: %s", strerror(errno));
      rc = 1;
    }
  }
  free(buf);
  return rc;
}

static fg_status find(const fg_ckpt *c, const char *name, cat_tensor *out) {
  const fg_ckpt_tensor *t;
  fg_status s = fg_ckpt_get(c, name, &t);
  if (s) return s;
  uint64_t row = t->ndim ? t->shape[t->ndim - 1] : 1;
  const fg_ckpt_file *f = fg_ckpt_file_at(c, t->file);
  /* the file named as the user named it ("m.safetensors" is mapped as "./m.safetensors") */
  const char *cp = fg_ckpt_path(c);
  const char *path = strncmp(f->path, "./", 2) == 0 && strcmp(f->path + 2, cp) == 0 ? cp : f->path;
  *out = (cat_tensor){name, path, t->dtype, f->map, t->offset, t->nbytes, t->numel, row ? row : 1};
  return FG_OK;
}

int fg_cmd_cat(int argc, char **argv) {
  const char *args[2] = {NULL, NULL}, *as = NULL;
  const fg_cli_opt opts[] = {{"--as", &as, NULL}};
  static const char *const pos_names[] = {"PATH", "TENSOR"};
  const fg_cli_spec spec = {"cat", "forgia cat PATH TENSOR [--as f32]", usage, opts, 1, pos_names, args, 2, 0,
                            1u << 1 /* TENSOR: safetensors allows the name "" */};
  int prc = fg_cli_parse(&spec, argc, argv);
  if (prc != FG_CLI_GO) return prc;
  if (as && strcmp(as, "f32") != 0) return fg_cli_usage_error(&spec, "--as", "takes f32, not '%s'", as);
  if (isatty(STDOUT_FILENO))
    return fg_cli_usage_error(&spec, "stdout",
                              "is a terminal; the bytes are binary: redirect them to a file or a pipe");
  const char *path = args[0], *name = args[1];
  /* SIGINT/SIGTERM: nothing to remove, but the exit says so in one line (130/143) */
  fg_cli_signals_catch();
  fg_ckpt *c = NULL;
  if (fg_ckpt_open(path, &c) != FG_OK) {
    if (fg_cli_signal_caught()) return fg_cli_interrupted("cat", path);
    fg_cli_report("cat", path);
    return 1;
  }
  if (fg_cli_signal_caught()) {
    fg_ckpt_close(c);
    return fg_cli_interrupted("cat", path);
  }
  cat_tensor t = {0};
  int rc = 0;
  if (find(c, name, &t) != FG_OK) {
    rc = 1;
  } else if (as) {
    if (!can_decode(t.dtype)) {
      fg_fail(FG_ERR_UNSUPPORTED, "tensor '%s' is %s, which --as f32 cannot decode", name, fg_dtype_name(t.dtype));
      rc = 1;
    } else {
      rc = write_f32(&t);
    }
  } else {
    rc = write_raw(&t);
  }
  /* bytes read from a file modified meanwhile may be a mix of old and new */
  if (!rc && t.map && fg_mapping_check(t.map) != FG_OK) {
    fg_fail_prefix(FG_ERR_IO, "tensor '%s': ", name);
    rc = 1;
  }
  if (!rc && fflush(stdout) != 0) {
    fg_fail(FG_ERR_IO, "stdout: write failed: %s", strerror(errno));
    rc = 1;
  }
  /* a failed write to stdout is about stdout, not the checkpoint */
  if (fg_cli_signal_caught()) rc = fg_cli_interrupted("cat", path);
  else if (rc) fg_cli_report("cat", ferror(stdout) ? NULL : path);
  fg_ckpt_close(c);
  return rc;
}
