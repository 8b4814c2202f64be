/* Generator of the ggml quantizer goldens tests/data/golden/<type>.bin and <type>.decode.bin
 * (layout and row rule: tests/data/golden/README.md; how to build and run: README.md here).
 * Our program, no ggml code: it links ggml's quantizers, built by build_and_run.sh from the
 * pinned source, and writes for each type
 *   <type>.bin          the 18 rows of the README quantized by ggml (ggml_quantize_chunk,
 *                       without weights; q8_1 and q8_K, which it refuses, through their
 *                       reference row quantizers) and, where ggml has a dequantizer, the
 *                       floats it reads back from those bytes;
 *   <type>.decode.bin   8 rows of splitmix64 bytes and ggml's dequantization of them.
 * The rows come from ../golden/weighted/weighted_rows.h, the same rule that
 * tests/cpu/test_quant_golden.cpp regenerates.
 * Usage: gen_quant_goldens OUT_DIR */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
/* ggml's internal header, for q8_K only: its row functions are not in the type traits */
#include "ggml-quants.h"
#include "weighted_rows.h"

enum { DECODE_ROWS = 8, DECODE_N = 256 };
#define DECODE_SEED0 0xDEC0DE00ull
#define DECODE_KIND 0xFFFFFFFFu

typedef void (*quant_row_fn)(const float *x, void *y, int64_t k);
typedef void (*deq_row_fn)(const void *x, float *y, int64_t k);

static void q8_K_quant(const float *x, void *y, int64_t k) { quantize_row_q8_K_ref(x, (block_q8_K *)y, k); }
static void q8_K_deq(const void *x, float *y, int64_t k) { dequantize_row_q8_K((const block_q8_K *)x, y, k); }

/* Types with a <type>.bin (has_bin) and with floats (every one ggml can dequantize). */
static const struct {
  enum ggml_type t;
  int has_bin;
} kTypes[] = {
    {GGML_TYPE_Q8_1, 1},    {GGML_TYPE_Q2_K, 1},    {GGML_TYPE_Q3_K, 1},   {GGML_TYPE_Q4_K, 1},
    {GGML_TYPE_Q5_K, 1},    {GGML_TYPE_Q6_K, 1},    {GGML_TYPE_Q8_K, 1},   {GGML_TYPE_IQ4_NL, 1},
    {GGML_TYPE_IQ4_XS, 1},  {GGML_TYPE_NVFP4, 1},   {GGML_TYPE_Q1_0, 1},   {GGML_TYPE_Q2_0, 1},
    {GGML_TYPE_MXFP4, 1},   {GGML_TYPE_TQ1_0, 1},   {GGML_TYPE_TQ2_0, 1},  {GGML_TYPE_IQ2_XXS, 0},
    {GGML_TYPE_IQ2_XS, 0},  {GGML_TYPE_IQ2_S, 0},   {GGML_TYPE_IQ3_XXS, 0}, {GGML_TYPE_IQ3_S, 0},
    {GGML_TYPE_IQ1_S, 0},   {GGML_TYPE_IQ1_M, 0},
};

static quant_row_fn ref_quantizer(enum ggml_type t) {
  if (t == GGML_TYPE_Q8_K) return q8_K_quant;
  return (quant_row_fn)ggml_get_type_traits(t)->from_float_ref;
}

static deq_row_fn dequantizer(enum ggml_type t) {
  if (t == GGML_TYPE_Q8_K) return q8_K_deq;
  return (deq_row_fn)ggml_get_type_traits(t)->to_float;
}

/* ggml_quantize_chunk takes every type here but q8_1 and q8_K (no row-chunk quantizer). */
static int chunk_quantizes(enum ggml_type t) { return t != GGML_TYPE_Q8_1 && t != GGML_TYPE_Q8_K; }

static FILE *out_f;
static void die(const char *what) {
  fprintf(stderr, "gen_quant_goldens: %s\n", what);
  exit(1);
}
static void put(const void *p, size_t n) {
  if (fwrite(p, 1, n, out_f) != n) die("write failed");
}
static void put_u32(uint32_t v) { put(&v, 4); }
static void put_u64(uint64_t v) { put(&v, 8); }

static void put_header(enum ggml_type t, uint32_t nrows, uint32_t flags) {
  put("FGGOLDEN", 8);
  put_u32(1);
  put_u32((uint32_t)t);
  put_u32(nrows);
  put_u32(flags);
}

static void put_row(uint32_t kind, uint32_t n, uint64_t seed, uint64_t hash, const uint8_t *q, size_t qbytes,
                    const float *deq) {
  put_u32(kind);
  put_u32(n);
  put_u64(seed);
  put_u64(hash);
  put_u32((uint32_t)qbytes);
  put_u32(0);
  put(q, qbytes);
  if (deq) put(deq, (size_t)n * 4);
}

static void open_out(const char *dir, const char *name, const char *suffix) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix);
  out_f = fopen(path, "wb");
  if (!out_f) die(path);
}
static void close_out(void) {
  if (fclose(out_f) != 0) die("close failed");
}

/* <type>.bin. Returns on how many rows the reference row quantizer gave ggml_quantize_chunk's
 * bytes (the README records where the two paths part), -1 where there is only one path. */
static int write_bin(const char *dir, enum ggml_type t) {
  const quant_row_fn ref = ref_quantizer(t);
  const deq_row_fn deq = dequantizer(t);
  int same = 0;
  open_out(dir, ggml_type_name(t), ".bin");
  put_header(t, (uint32_t)FGW_NROWS_TABLE, deq ? 1u : 0u);
  for (size_t r = 0; r < FGW_NROWS_TABLE; r++) {
    const uint32_t kind = fgw_row_table[r][0], n = fgw_row_table[r][1];
    const uint64_t seed = fgw_row_table[r][2];
    const size_t qbytes = ggml_row_size(t, n);
    float *x = malloc((size_t)n * 4), *f = malloc((size_t)n * 4);
    /* zero-filled: q8_K's reference quantizer leaves bsums unwritten on an all-zero block */
    uint8_t *q = calloc(qbytes, 1), *qr = calloc(qbytes, 1);
    if (!x || !f || !q || !qr) die("out of memory");
    fgw_row(kind, n, seed, x);
    ref(x, qr, n);
    if (chunk_quantizes(t)) {
      if (ggml_quantize_chunk(t, x, q, 0, 1, n, NULL) != qbytes) die("ggml_quantize_chunk: unexpected size");
      same += memcmp(q, qr, qbytes) == 0;
    } else {
      memcpy(q, qr, qbytes);
    }
    if (deq) deq(q, f, n);
    put_row(kind, n, seed, fgw_fnv1a(x, (size_t)n * 4), q, qbytes, deq ? f : NULL);
    free(x);
    free(f);
    free(q);
    free(qr);
  }
  close_out();
  return chunk_quantizes(t) ? same : -1;
}

/* <type>.decode.bin: byte i of row r is the top byte of the i-th splitmix64 draw from seed
 * 0xDEC0DE00 + r, so scales and grid indices take every value, NaN and Inf included. */
static void write_decode(const char *dir, enum ggml_type t) {
  const deq_row_fn deq = dequantizer(t);
  const size_t qbytes = ggml_row_size(t, DECODE_N);
  uint8_t *q = malloc(qbytes);
  float *f = malloc((size_t)DECODE_N * 4);
  if (!q || !f) die("out of memory");
  open_out(dir, ggml_type_name(t), ".decode.bin");
  put_header(t, DECODE_ROWS, 3u);
  for (uint32_t r = 0; r < DECODE_ROWS; r++) {
    fgw_rng g = {DECODE_SEED0 + r};
    for (size_t i = 0; i < qbytes; i++) q[i] = (uint8_t)(fgw_next(&g) >> 56);
    deq(q, f, DECODE_N);
    put_row(DECODE_KIND, DECODE_N, DECODE_SEED0 + r, 0, q, qbytes, f);
  }
  close_out();
  free(q);
  free(f);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_quant_goldens OUT_DIR\n");
    return 2;
  }
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; i++) {
    const enum ggml_type t = kTypes[i].t;
    printf("%-8s", ggml_type_name(t));
    if (kTypes[i].has_bin) {
      const int same = write_bin(argv[1], t);
      printf(" .bin (%s)", dequantizer(t) ? "bytes, floats" : "bytes only");
      if (same >= 0) printf(", reference row quantizer agrees on %d of %zu rows", same, FGW_NROWS_TABLE);
    }
    if (dequantizer(t)) {
      write_decode(argv[1], t);
      printf(" .decode.bin");
    }
    printf("\n");
  }
  return 0;
}
