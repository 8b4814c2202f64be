/* Attention's backward on the CPU (forgia/attention.h), in three OpenMP phases:
 *   1. per (token, head) the D term, and the key and value caches copied into tiles of TJ
 *      slots laid out [d][slot], so the dots of one query row with TJ keys run as TJ
 *      independent lanes (each dot still in d order from +0: the contract's bits);
 *   2. dq, per (token, kv head) item: its group's heads over the span's slots ascending;
 *   3. dk and dv, per tile of TJ cache slots of one (sequence, kv head): the tokens that
 *      attend ascending, the heads of the group ascending, each recomputing p_j and ds_j.
 * Each output element is summed whole by one item in the contract's order, so the bits do
 * not depend on the thread count and equal CUDA's. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "device/backend.h"
#include "forgia/elem/attention_bwd.h"

#define FG_AB_TJ 16 /* two vectors of 8 */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* Wider vectors only: -ffp-contract=off still forbids fusing, so every clone rounds alike. */
#define FG_AB_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FG_AB_CLONES
#endif

typedef struct fg_cpu_ab {
  const fg_attention_bwd_call *c;
  size_t G, tiles; /* heads per kv head; tiles per (sequence, kv head) */
  float *kt, *vt;  /* the tiled caches */
  float *dterm;    /* n_tok x n_head */
} fg_cpu_ab;

static const float *fg_ab_tile(const fg_cpu_ab *w, const float *t, size_t sq, size_t kvh, size_t tb) {
  const fg_attention_call *f = &w->c->f;
  return t + ((sq * f->n_kv_head + kvh) * w->tiles + tb) * f->head_dim * FG_AB_TJ;
}

typedef float fg_ab_v8 __attribute__((vector_size(32)));

/* s_j = scale * dot(q, k_j) and dp_j = dot(dout, v_j) for the TJ slots of a tile: each lane
 * one slot's dot, in d order from +0 (a scalar times a vector splats the scalar). */
static inline void fg_ab_dots(const float *q, const float *g, const float *kt, const float *vt, size_t D, float scale,
                              float *s, float *dp) {
  fg_ab_v8 a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0};
  for (size_t d = 0; d < D; d++) {
    fg_ab_v8 k0, k1, v0, v1;
    memcpy(&k0, kt + d * FG_AB_TJ, 32), memcpy(&k1, kt + d * FG_AB_TJ + 8, 32);
    memcpy(&v0, vt + d * FG_AB_TJ, 32), memcpy(&v1, vt + d * FG_AB_TJ + 8, 32);
    a0 = a0 + q[d] * k0, a1 = a1 + q[d] * k1;
    b0 = b0 + g[d] * v0, b1 = b1 + g[d] * v1;
  }
  a0 = scale * a0, a1 = scale * a1;
  memcpy(s, &a0, 32), memcpy(s + 8, &a1, 32), memcpy(dp, &b0, 32), memcpy(dp + 8, &b1, 32);
}

/* c ? a : b on bit patterns, with c 0 or 1: a select the vectorizer takes. */
static inline float fg_ab_sel(uint32_t c, float a, float b) {
  const uint32_t m = 0u - c;
  return fg_bits_f32((fg_f32_bits(a) & m) | (fg_f32_bits(b) & ~m));
}

/* p_j = fg_exp_f32(s_j - lse) and ds_j = p_j * (dp_j - D) for the TJ slots of a tile, without
 * branches so the loop vectorizes: every lane runs fg_exp_f32's operations (elem/fmath.h) on
 * a clamped copy of its argument, then its special cases are selected, so each p_j has
 * fg_exp_f32's bits (the lanes of cpu/cpu_softmax.c). */
static inline void fg_ab_p_ds(const float *s, const float *dp, float lse, float dterm, float *p, float *ds) {
  for (int j = 0; j < FG_AB_TJ; j++) {
    const float x = s[j] - lse;
    const uint32_t nan = x != x, big = x > 88.72283935546875f, small = x < -103.97207708f;
    const float a = fg_ab_sel(nan | big | small, 0.0f, x);
    int32_t k = 0;
    const float r = fg_exp_f32_reduce(a, &k);
    const float sub = (r * fg_bits_f32((uint32_t)(k + 64 + 127) << 23)) * fg_bits_f32((uint32_t)(-64 + 127) << 23);
    const float top = (r * fg_bits_f32((uint32_t)(k - 1 + 127) << 23)) * 2.0f;
    const float mid = r * fg_bits_f32((uint32_t)(k + 127) << 23);
    float v = fg_ab_sel(k < -126, sub, fg_ab_sel(k > 127, top, mid));
    v = fg_ab_sel(small, 0.0f, v);
    v = fg_ab_sel(big, fg_bits_f32(0x7f800000u), v);
    p[j] = fg_ab_sel(nan, fg_bits_f32(0x7fc00000u), v);
    ds[j] = fg_attn_ds(p[j], dp[j], dterm);
  }
}

/* Phase 1, item i < n_tok * n_head: the D term of that row. */
static void fg_ab_dterm(const fg_cpu_ab *w, size_t row) {
  const fg_attention_bwd_call *c = w->c;
  const size_t D = c->f.head_dim;
  w->dterm[row] = fg_attn_dot(c->dout + row * D, c->f.out + row * D, D);
}

/* Phase 1, one tile of one (sequence, kv head): slots past n_ctx are zeros (never used). */
static void fg_ab_transpose(const fg_cpu_ab *w, size_t blk, size_t tb) {
  const fg_attention_call *f = &w->c->f;
  const size_t D = f->head_dim, j0 = tb * FG_AB_TJ;
  float *kt = w->kt + (blk * w->tiles + tb) * D * FG_AB_TJ, *vt = w->vt + (blk * w->tiles + tb) * D * FG_AB_TJ;
  for (size_t jj = 0; jj < FG_AB_TJ; jj++) {
    const int in = j0 + jj < f->n_ctx;
    const float *kr = f->k + (blk * f->n_ctx + j0 + jj) * D, *vr = f->v + (blk * f->n_ctx + j0 + jj) * D;
    for (size_t d = 0; d < D; d++) {
      kt[d * FG_AB_TJ + jj] = in ? kr[d] : 0.0f;
      vt[d * FG_AB_TJ + jj] = in ? vr[d] : 0.0f;
    }
  }
}

/* Phase 2: dq of the G heads of token t that read kv head kvh; acc is G x head_dim. */
FG_AB_CLONES static void fg_ab_dq(const fg_cpu_ab *w, size_t t, size_t kvh, float *acc) {
  const fg_attention_bwd_call *c = w->c;
  const fg_attention_call *f = &c->f;
  const size_t D = f->head_dim, G = w->G, row0 = t * f->n_head + kvh * G;
  float *dq = c->dq + row0 * D;
  size_t lo = 0, hi = 0, kv = 0;
  if (!fg_attn_span(f, t, kvh * G, &lo, &hi, &kv)) {
    for (size_t i = 0; i < G * D; i++) dq[i] = fg_bits_f32(0x7fc00000u);
    return;
  }
  const size_t sq = (size_t)(f->seq ? f->seq[t] : 0);
  for (size_t i = 0; i < G * D; i++) acc[i] = 0.0f;
  float s[FG_AB_TJ], dp[FG_AB_TJ], p[FG_AB_TJ], ds[FG_AB_TJ];
  for (size_t tb = lo / FG_AB_TJ; tb <= hi / FG_AB_TJ; tb++) {
    const size_t j0 = tb * FG_AB_TJ, jl = lo > j0 ? lo - j0 : 0, jh = hi - j0 < FG_AB_TJ ? hi - j0 : FG_AB_TJ - 1;
    const float *kt = fg_ab_tile(w, w->kt, sq, kvh, tb), *vt = fg_ab_tile(w, w->vt, sq, kvh, tb);
    for (size_t g = 0; g < G; g++) {
      const size_t row = row0 + g;
      fg_ab_dots(f->q + row * D, c->dout + row * D, kt, vt, D, f->scale, s, dp);
      fg_ab_p_ds(s, dp, f->lse[row], w->dterm[row], p, ds);
      float *a = acc + g * D;
      for (size_t jj = jl; jj <= jh; jj++) {
        const float *kr = f->k + kv + (j0 + jj) * D;
        for (size_t d = 0; d < D; d++) a[d] = a[d] + ds[jj] * kr[d];
      }
    }
  }
  for (size_t i = 0; i < G * D; i++) dq[i] = fg_attn_dscaled(f->scale, acc[i]);
}

/* Phase 3: dk and dv of the slots of tile tb of (sequence sq, kv head kvh), summed in place. */
FG_AB_CLONES static void fg_ab_dkv(const fg_cpu_ab *w, size_t sq, size_t kvh, size_t tb) {
  const fg_attention_bwd_call *c = w->c;
  const fg_attention_call *f = &c->f;
  const size_t D = f->head_dim, G = w->G, j0 = tb * FG_AB_TJ;
  const size_t jn = f->n_ctx - j0 < FG_AB_TJ ? f->n_ctx - j0 : FG_AB_TJ;
  const size_t base = ((sq * f->n_kv_head + kvh) * f->n_ctx + j0) * D;
  float *dk = c->dk + base, *dv = c->dv + base;
  for (size_t i = 0; i < jn * D; i++) dk[i] = 0.0f, dv[i] = 0.0f;
  if (!f->n_tok) return;
  const float *kt = fg_ab_tile(w, w->kt, sq, kvh, tb), *vt = fg_ab_tile(w, w->vt, sq, kvh, tb);
  float s[FG_AB_TJ], dp[FG_AB_TJ], p[FG_AB_TJ], ds[FG_AB_TJ];
  int hit[FG_AB_TJ] = {0}; /* a slot no token attends stays +0, whatever the sign of scale */
  for (size_t t = 0; t < f->n_tok; t++) {
    size_t lo = 0, hi = 0, kv = 0;
    const int32_t ts = f->seq ? f->seq[t] : 0;
    if (ts < 0 || (size_t)ts != sq || !fg_attn_span(f, t, 0, &lo, &hi, &kv)) continue;
    if (hi < j0 || lo >= j0 + jn) continue;
    const size_t jl = lo > j0 ? lo - j0 : 0, jh = hi - j0 < jn ? hi - j0 : jn - 1;
    for (size_t g = 0; g < G; g++) {
      const size_t row = t * f->n_head + kvh * G + g;
      const float *q = f->q + row * D, *go = c->dout + row * D;
      fg_ab_dots(q, go, kt, vt, D, f->scale, s, dp);
      fg_ab_p_ds(s, dp, f->lse[row], w->dterm[row], p, ds);
      for (size_t jj = jl; jj <= jh; jj++) {
        float *dkr = dk + jj * D, *dvr = dv + jj * D;
        hit[jj] = 1;
        for (size_t d = 0; d < D; d++) {
          dkr[d] = dkr[d] + ds[jj] * q[d];
          dvr[d] = dvr[d] + p[jj] * go[d];
        }
      }
    }
  }
  for (size_t jj = 0; jj < jn; jj++)
    for (size_t d = 0; d < D; d++) {
      float *k = dk + jj * D + d, *v = dv + jj * D + d;
      *k = hit[jj] ? fg_attn_dscaled(f->scale, *k) : 0.0f, *v = fg_attn_canon(*v);
    }
}

fg_status fg_cpu_attention_bwd(fg_device *dev, const fg_attention_bwd_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  const fg_attention_call *f = &c->f;
  fg_cpu_ab w = {.c = c, .G = f->n_head / f->n_kv_head, .tiles = (f->n_ctx + FG_AB_TJ - 1) / FG_AB_TJ};
  const size_t blocks = f->n_seq * f->n_kv_head, D = f->head_dim, rows = f->n_tok * f->n_head;
  if (f->n_tok) {
    /* A cache that fits in size_t fits rounded up to whole tiles times 2, bar the last
     * TJ - 1 slots of each block: checked, not assumed. */
    const size_t per = w.tiles * FG_AB_TJ * D;
    if (per / D / FG_AB_TJ != w.tiles || (blocks && per > SIZE_MAX / sizeof(float) / blocks))
      return fg_fail(FG_ERR_OVERFLOW, "attention backward: tiled caches of %zu x %zu floats overflow", blocks, per);
    w.kt = malloc(blocks * per * sizeof(float));
    w.vt = malloc(blocks * per * sizeof(float));
    w.dterm = malloc(rows * sizeof(float));
    if (!w.kt || !w.vt || !w.dterm) {
      free(w.kt), free(w.vt), free(w.dterm);
      return fg_fail(FG_ERR_NOMEM, "attention backward: no scratch for 2 x %zu x %zu tiled cache floats", blocks, per);
    }
  }
  const long long n_tiles = (long long)(blocks * w.tiles), n_dq = (long long)(f->n_tok * f->n_kv_head);
  const size_t work = rows * (f->window && f->window < f->n_ctx ? f->window : f->n_ctx) * D;
  int failed = 0;
#pragma omp parallel if (work > 32768 || blocks * f->n_ctx * D > 65536) reduction(| : failed)
  {
    if (f->n_tok) {
#pragma omp for schedule(static)
      for (long long i = 0; i < (long long)rows; i++) fg_ab_dterm(&w, (size_t)i);
#pragma omp for schedule(static)
      for (long long i = 0; i < n_tiles; i++) fg_ab_transpose(&w, (size_t)i / w.tiles, (size_t)i % w.tiles);
      float *acc = malloc(w.G * D * sizeof(float));
      failed |= !acc;
      /* A thread without scratch takes no items; the others finish, then the call fails. */
#pragma omp for schedule(dynamic, 1)
      for (long long i = 0; i < n_dq; i++)
        if (acc) fg_ab_dq(&w, (size_t)i / f->n_kv_head, (size_t)i % f->n_kv_head, acc);
      free(acc);
    }
#pragma omp for schedule(dynamic, 1)
    for (long long i = 0; i < n_tiles; i++) {
      const size_t blk = (size_t)i / w.tiles;
      fg_ab_dkv(&w, blk / f->n_kv_head, blk % f->n_kv_head, (size_t)i % w.tiles);
    }
  }
  free(w.kt), free(w.vt), free(w.dterm);
  if (failed) return fg_fail(FG_ERR_NOMEM, "attention backward: no scratch for %zu x %zu dq sums", w.G, D);
  return FG_OK;
}
