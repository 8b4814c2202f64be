/* forgia cat: one tensor's bytes to stdout, raw or decoded to little-endian f32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/quant.h"
#include "util_ckpt.h"

const char fg_cmd_cat_summary[] = "write one tensor's raw bytes, or its values as little-endian f32, to stdout";

static void usage(FILE *f) {
  fprintf(f,
          "usage: forgia cat PATH TENSOR [--as f32]\n\n"
          "PATH is a GGUF file (or part 1 of a split), a safetensors file or a Hugging Face folder.\n"
          "Without --as the tensor's stored bytes are written unchanged; --as f32 decodes\n"
          "f32, f16, bf16 and f64 tensors, and ggml block types, to little-endian f32.\n");
}

/* The tensor as cat sees it, whichever container holds it. */
typedef struct cat_tensor {
  fg_dtype dtype;
  const uint8_t *data;
  uint64_t nbytes;
  uint64_t numel;
  uint64_t row;        /* elements per row (innermost dimension; 1 for a scalar) */
} cat_tensor;

static uint64_t le_bytes(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* Decodes rows [r0, r0+nr) of t into out. Scalar float types convert element by element;
 * any type the quant codecs decode goes through fg_quant_decode_rows. */
static fg_status decode_rows(const cat_tensor *t, uint64_t r0, uint64_t nr, float *out) {
  uint64_t n = nr * t->row, first = r0 * t->row;
  switch (t->dtype) {
    case FG_F32:
      for (uint64_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)le_bytes(t->data + 4 * (first + i), 4);
        memcpy(&out[i], &u, 4);
      }
      return FG_OK;
    case FG_F16:
      for (uint64_t i = 0; i < n; i++) out[i] = fg_f16_to_f32((uint16_t)le_bytes(t->data + 2 * (first + i), 2));
      return FG_OK;
    case FG_BF16:
      for (uint64_t i = 0; i < n; i++) out[i] = fg_bf16_to_f32((uint16_t)le_bytes(t->data + 2 * (first + i), 2));
      return FG_OK;
    case FG_F64:
      for (uint64_t i = 0; i < n; i++) {
        uint64_t u = le_bytes(t->data + 8 * (first + i), 8);
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
    return fg_quant_decode_rows(t->dtype, t->data + r0 * row_bytes, (size_t)(nr * row_bytes), out, (int64_t)nr,
                                (int64_t)t->row);
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
  float *buf = malloc((size_t)(chunk * t->row) * sizeof *buf);
  uint8_t *le = malloc((size_t)(chunk * t->row) * 4);
  if (!buf || !le) {
    free(buf);
    free(le);
    fg_fail(FG_ERR_NOMEM, "out of memory for a %llu-value chunk", (unsigned long long)(chunk * t->row));
    return 1;
  }
  int rc = 0;
  for (uint64_t r = 0; r < nrows && !rc; r += chunk) {
    uint64_t nr = nrows - r < chunk ? nrows - r : chunk;
    if (decode_rows(t, r, nr, buf) != FG_OK) {
      rc = 1;
      break;
    }
    for (uint64_t i = 0; i < nr * t->row; i++) {
      uint32_t u;
      memcpy(&u, &buf[i], 4);
      for (int b = 0; b < 4; b++) le[4 * i + (uint64_t)b] = (uint8_t)(u >> (8 * b));
    }
    if (fwrite(le, 4, (size_t)(nr * t->row), stdout) != nr * t->row) {
      fg_fail(FG_ERR_IO, "write to stdout failed");
      rc = 1;
    }
  }
  free(buf);
  free(le);
  return rc;
}

static fg_status find(const fg_ckpt *c, const char *name, cat_tensor *out) {
  const fg_ckpt_tensor *t;
  fg_status s = fg_ckpt_get(c, name, &t);
  if (s) return s;
  uint64_t row = t->ndim ? t->shape[t->ndim - 1] : 1;
  *out = (cat_tensor){t->dtype, t->data, t->nbytes, t->numel, row ? row : 1};
  return FG_OK;
}

int fg_cmd_cat(int argc, char **argv) {
  const char *path = NULL, *name = NULL, *as = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "--as") && i + 1 < argc) {
      as = argv[++i];
      if (strcmp(as, "f32") != 0) {
        fprintf(stderr, "forgia cat: --as takes f32, not '%s'\n", as);
        usage(stderr);
        return 2;
      }
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "forgia cat: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    } else if (!path) {
      path = argv[i];
    } else if (!name) {
      name = argv[i];
    } else {
      fprintf(stderr, "forgia cat: unexpected argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (!path || !name) {
    usage(stderr);
    return 2;
  }
  fg_ckpt *c = NULL;
  if (fg_ckpt_open(path, &c) != FG_OK) {
    fg_cli_report("cat", path);
    return 1;
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
  } else if (t.nbytes && fwrite(t.data, 1, (size_t)t.nbytes, stdout) != t.nbytes) {
    fg_fail(FG_ERR_IO, "write to stdout failed");
    rc = 1;
  }
  if (!rc && fflush(stdout) != 0) {
    fg_fail(FG_ERR_IO, "write to stdout failed");
    rc = 1;
  }
  if (rc) fg_cli_report("cat", path);
  fg_ckpt_close(c);
  return rc;
}
