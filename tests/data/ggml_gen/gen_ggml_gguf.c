/* Writes tests/data/golden/ggml_u64.gguf with ggml's own GGUF writer (src/gguf.cpp), so that
 * forgia's reader is checked against bytes ggml produced, not against gguf-py's or its own
 * writer. Built against ggml sources that are not part of this repository: see README.md.
 *
 * Usage: gen_ggml_gguf OUT.gguf
 *
 * After writing, the file is read back with ggml's reader and every value compared, so a
 * file that ggml itself cannot read back exactly is never produced. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-backend.h"
#include "gguf.h"

/* ggml.c references these backend functions (for tensors that live in a backend buffer).
 * The generator links no backend and its tensors live in a ggml context (buffer == NULL),
 * so they are never called; they abort to prove it. */
enum ggml_backend_buffer_usage ggml_backend_buffer_get_usage(ggml_backend_buffer_t buffer) {
  (void)buffer;
  abort();
}
void ggml_backend_tensor_set(struct ggml_tensor *t, const void *d, size_t off, size_t n) {
  (void)t; (void)d; (void)off; (void)n;
  abort();
}
void ggml_backend_tensor_get(const struct ggml_tensor *t, void *d, size_t off, size_t n) {
  (void)t; (void)d; (void)off; (void)n;
  abort();
}
void ggml_backend_tensor_memset(struct ggml_tensor *t, uint8_t v, size_t off, size_t n) {
  (void)t; (void)v; (void)off; (void)n;
  abort();
}

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "gen_ggml_gguf: check failed: %s (line %d)\n", #cond, __LINE__); \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

static const uint64_t U64_ARR[3] = {0u, UINT64_C(9223372036854775808), UINT64_MAX};
/* t.mat: ne = {3, 2} (2 rows of 3), row-major. */
static const float MAT[6] = {1.5f, -2.25f, 0.0f, -0.0f, FLT_MAX, 0x1p-149f};
static const float VEC[4] = {0.1f, -7.0f, 1024.0f, 0x1p-20f};

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static uint64_t f64_bits(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_ggml_gguf OUT.gguf\n");
    return 2;
  }
  const char *out = argv[1];

  struct gguf_context *g = gguf_init_empty();
  gguf_set_val_str(g, "general.name", "ggml u64 golden");
  gguf_set_val_u64(g, "test.u64.max", UINT64_MAX);                           /* 2^64-1 */
  gguf_set_val_u64(g, "test.u64.two63", UINT64_C(9223372036854775808));      /* 2^63 */
  gguf_set_arr_data(g, "test.u64.arr", GGUF_TYPE_UINT64, U64_ARR, 3);
  gguf_set_val_i64(g, "test.i64.min", INT64_MIN);
  gguf_set_val_f32(g, "test.f32.negzero", -0.0f);
  gguf_set_val_f64(g, "test.f64.negzero", -0.0);
  gguf_set_val_str(g, "test.str", "forgia <- ggml");

  struct ggml_init_params ip = {.mem_size = 1 << 16, .mem_buffer = NULL, .no_alloc = false};
  struct ggml_context *ctx = ggml_init(ip);
  CHECK(ctx != NULL);
  struct ggml_tensor *mat = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
  ggml_set_name(mat, "t.mat");
  memcpy(mat->data, MAT, sizeof MAT);
  struct ggml_tensor *vec = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
  ggml_set_name(vec, "t.vec");
  memcpy(vec->data, VEC, sizeof VEC);
  gguf_add_tensor(g, mat);
  gguf_add_tensor(g, vec);

  CHECK(gguf_write_to_file(g, out, false));
  gguf_free(g);
  ggml_free(ctx);

  /* Read back with ggml's reader. */
  struct ggml_context *rctx = NULL;
  struct gguf_init_params rp = {.no_alloc = false, .ctx = &rctx};
  struct gguf_context *r = gguf_init_from_file(out, rp);
  CHECK(r != NULL);
  CHECK(gguf_get_n_kv(r) == 8);
  int64_t k;
  CHECK((k = gguf_find_key(r, "test.u64.max")) >= 0);
  CHECK(gguf_get_kv_type(r, k) == GGUF_TYPE_UINT64 && gguf_get_val_u64(r, k) == UINT64_MAX);
  CHECK((k = gguf_find_key(r, "test.u64.two63")) >= 0);
  CHECK(gguf_get_kv_type(r, k) == GGUF_TYPE_UINT64 &&
        gguf_get_val_u64(r, k) == UINT64_C(9223372036854775808));
  CHECK((k = gguf_find_key(r, "test.u64.arr")) >= 0);
  CHECK(gguf_get_kv_type(r, k) == GGUF_TYPE_ARRAY && gguf_get_arr_type(r, k) == GGUF_TYPE_UINT64);
  CHECK(gguf_get_arr_n(r, k) == 3 && memcmp(gguf_get_arr_data(r, k), U64_ARR, sizeof U64_ARR) == 0);
  CHECK((k = gguf_find_key(r, "test.i64.min")) >= 0);
  CHECK(gguf_get_kv_type(r, k) == GGUF_TYPE_INT64 && gguf_get_val_i64(r, k) == INT64_MIN);
  CHECK((k = gguf_find_key(r, "test.f32.negzero")) >= 0);
  CHECK(gguf_get_kv_type(r, k) == GGUF_TYPE_FLOAT32 && f32_bits(gguf_get_val_f32(r, k)) == 0x80000000u);
  CHECK((k = gguf_find_key(r, "test.f64.negzero")) >= 0);
  CHECK(gguf_get_kv_type(r, k) == GGUF_TYPE_FLOAT64 &&
        f64_bits(gguf_get_val_f64(r, k)) == UINT64_C(0x8000000000000000));
  CHECK((k = gguf_find_key(r, "test.str")) >= 0);
  CHECK(strcmp(gguf_get_val_str(r, k), "forgia <- ggml") == 0);
  CHECK(gguf_get_n_tensors(r) == 2);
  struct ggml_tensor *rm = ggml_get_tensor(rctx, "t.mat");
  struct ggml_tensor *rv = ggml_get_tensor(rctx, "t.vec");
  CHECK(rm && rv && rm->type == GGML_TYPE_F32 && rm->ne[0] == 3 && rm->ne[1] == 2);
  CHECK(rv->type == GGML_TYPE_F32 && rv->ne[0] == 4 && ggml_n_dims(rv) == 1);
  CHECK(memcmp(rm->data, MAT, sizeof MAT) == 0 && memcmp(rv->data, VEC, sizeof VEC) == 0);
  printf("wrote %s: version %" PRIu32 ", alignment %zu, data offset %zu, %" PRId64 " KVs, %" PRId64
         " tensors (t.mat at %zu, t.vec at %zu)\n",
         out, gguf_get_version(r), gguf_get_alignment(r), gguf_get_data_offset(r), gguf_get_n_kv(r),
         gguf_get_n_tensors(r), gguf_get_tensor_offset(r, gguf_find_tensor(r, "t.mat")),
         gguf_get_tensor_offset(r, gguf_find_tensor(r, "t.vec")));
  gguf_free(r);
  ggml_free(rctx);
  return 0;
}
