/* libFuzzer target for importance matrices and the weighted encoders. The first byte picks:
 *   even: the rest is an importance-matrix file (either form). An accepted one must hold
 *         only finite weights, in strictly ascending name order, each found by its name.
 *   odd:  the rest is floats: 256 inputs then 256 weights (missing ones are zero), encoded
 *         as the type the second byte names (mod the ggml type count); any status is fine,
 *         but nothing may read or write outside the buffers (ASan) and an accepted row must
 *         encode to the same bytes twice. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/imatrix.h"
#include "forgia/quant_weighted.h"

static void imatrix(const uint8_t *data, size_t size) {
  fg_imatrix *m = NULL;
  if (fg_imatrix_open_bytes(data, size, "fuzz", &m) != FG_OK) {
    if (m) abort();
    return;
  }
  const char *prev = NULL;
  for (size_t i = 0; i < fg_imatrix_count(m); i++) {
    fg_imatrix_entry e, f;
    if (fg_imatrix_entry_at(m, i, &e) != FG_OK) abort();
    if (prev && strcmp(prev, e.name) >= 0) abort();
    prev = e.name;
    if (e.n_values < 1 || e.n_counts < 1 || e.n_values % e.n_counts != 0) abort();
    for (int64_t j = 0; j < e.n_values; j++)
      if (!isfinite(e.weights[j])) abort();
    if (fg_imatrix_get(m, e.name, &f) != FG_OK || f.weights != e.weights) abort();
    const float *w = NULL;
    if (fg_imatrix_weights_for(m, e.name, e.n_values / e.n_counts, e.n_counts, &w) != FG_OK || w != e.weights) abort();
  }
  for (size_t i = 0; i < fg_imatrix_dataset_count(m); i++)
    if (!fg_imatrix_dataset(m, i)) abort();
  fg_imatrix_close(m);
}

static void encode(const uint8_t *data, size_t size) {
  if (size < 1) return;
  const fg_dtype t = (fg_dtype)(data[0] % FG_GGML_TYPE_COUNT);
  data++;
  size--;
  float x[256] = {0}, w[256] = {0};
  size_t nx = size / 4 < 256 ? size / 4 : 256;
  memcpy(x, data, nx * 4);
  if (size > 1024) {
    size_t nw = (size - 1024) / 4 < 256 ? (size - 1024) / 4 : 256;
    memcpy(w, data + 1024, nw * 4);
  }
  if (!fg_quant_can_encode_weighted(t)) return;
  uint64_t nb = 0;
  if (fg_dtype_nbytes(t, 256, &nb) != FG_OK || nb > 2048) return;
  uint8_t *a = (uint8_t *)malloc(nb), *b = (uint8_t *)malloc(nb);
  if (!a || !b) abort();
  if (fg_quant_encode_rows_weighted(t, x, 1, 256, w, a, nb) == FG_OK) {
    if (fg_quant_encode_rows_weighted(t, x, 1, 256, w, b, nb) != FG_OK || memcmp(a, b, nb) != 0) abort();
  }
  free(a);
  free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 1) encode(data + 1, size - 1);
  else imatrix(data + 1, size - 1);
  return 0;
}
