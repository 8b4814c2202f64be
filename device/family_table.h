/* The kernel-family table: every kernel that is not a per-element op (docs/design.md, "The op
 * layer and kernel families"). Internal.
 *
 * A family is one validated call struct that a public front (device/<family>.c) fills in and
 * one launcher per backend that runs it: fg_cpu_<family> (cpu/) and fg_cuda_<family> (cuda/,
 * usually in cuda/kernels/<family>.cu). One row below generates the family's id, both
 * launchers' prototypes, each backend's slot (FG_FAMILY_SLOTS) and the typed dispatch
 * fg_family_<family>() that fronts call after their own checks. Adding a family: its elem/
 * math and call struct, a row here, a CPU launcher, a CUDA launcher, a front, and a case in
 * tests/util/family_cases.h (tests/cpu/test_families.cpp fails for a row without one).
 *
 * X(name, call struct tag). Rows are never reordered in a way anything outside this build
 * sees: the ids are internal, not part of the public API. */
#ifndef FORGIA_DEVICE_FAMILY_TABLE_H
#define FORGIA_DEVICE_FAMILY_TABLE_H

#include "forgia/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(a, name, call): a is passed through to every row (a backend's prefix, or nothing). */
#define FG_FAMILY_TABLE(X, a)         \
  X(a, op, fg_op_call)                \
  X(a, reduce, fg_reduce_call)        \
  X(a, sum_f64, fg_sum_f64_call)      \
  X(a, gemm, fg_gemm_call)            \
  X(a, apollo, fg_apollo_call)        \
  X(a, es_trits, fg_es_trits_call)    \
  X(a, rmsnorm, fg_rmsnorm_call)      \
  X(a, attention, fg_attention_call)  \
  X(a, attention_bwd, fg_attention_bwd_call) \
  X(a, softmax, fg_softmax_call)      \
  X(a, rope, fg_rope_call)            \
  X(a, embed, fg_embed_call)          \
  X(a, linear, fg_linear_call)        \
  X(a, linear_bwd, fg_linear_bwd_call) \
  X(a, embed_bwd, fg_embed_bwd_call)

typedef enum fg_family_id {
#define FG_FAMILY_ID_(a, name, call) FG_FAMILY_##name,
  FG_FAMILY_TABLE(FG_FAMILY_ID_, )
#undef FG_FAMILY_ID_
  FG_FAMILY_COUNT
} fg_family_id;

/* A backend's slot: call points to the family's call struct. */
typedef fg_status (*fg_family_fn)(fg_device *dev, const void *call, fg_stream *stream);

/* The family's name ("rmsnorm"), NULL for an id out of range. */
const char *fg_family_name(fg_family_id id);

/* The launchers. stream is never NULL (the device's own stream when the caller gave none);
 * the front has validated the call. CPU launchers finish before they return; CUDA launchers
 * queue on the stream. */
#define FG_FAMILY_PROTO_(a, name, call)                                                    \
  struct call;                                                                             \
  fg_status fg_cpu_##name(fg_device *dev, const struct call *c, fg_stream *stream);
FG_FAMILY_TABLE(FG_FAMILY_PROTO_, )
#undef FG_FAMILY_PROTO_
#ifdef FORGIA_HAVE_CUDA
#define FG_FAMILY_PROTO_(a, name, call) \
  fg_status fg_cuda_##name(fg_device *dev, const struct call *c, fg_stream *stream);
FG_FAMILY_TABLE(FG_FAMILY_PROTO_, )
#undef FG_FAMILY_PROTO_
#endif

/* Defines `const fg_family_fn <prefix>_families[FG_FAMILY_COUNT]` from <prefix>_<name> for
 * every row, through typed thunks (no call through a cast function pointer). A backend that
 * lacks a launcher fails to link, so no family is missing on any backend. */
#define FG_FAMILY_THUNK_(prefix, name, call)                                              \
  static fg_status prefix##_family_##name(fg_device *dev, const void *c, fg_stream *s) { \
    return prefix##_##name(dev, (const struct call *)c, s);                               \
  }
#define FG_FAMILY_SLOT_(prefix, name, call) [FG_FAMILY_##name] = prefix##_family_##name,
#define FG_FAMILY_SLOTS(prefix)                              \
  FG_FAMILY_TABLE(FG_FAMILY_THUNK_, prefix)                  \
  const fg_family_fn prefix##_families[FG_FAMILY_COUNT] = {  \
      FG_FAMILY_TABLE(FG_FAMILY_SLOT_, prefix)};

/* Runs a validated call: the checks every family shares (a device, a stream of that device,
 * a launcher on its backend), then the launcher on the caller's stream or, for a NULL
 * stream, on the device's own stream, waited for. what names the public call in errors. */
fg_status fg_family_run(fg_device *dev, fg_family_id id, const void *call, fg_stream *stream, const char *what);

/* Typed forms of fg_family_run: fg_family_<name>(dev, call, stream, what). */
#define FG_FAMILY_TYPED_(a, name, call)                                                                      \
  static inline fg_status fg_family_##name(fg_device *dev, const struct call *c, fg_stream *s, const char *w) { \
    return fg_family_run(dev, FG_FAMILY_##name, c, s, w);                                                 \
  }
FG_FAMILY_TABLE(FG_FAMILY_TYPED_, )
#undef FG_FAMILY_TYPED_

#ifdef __cplusplus
}
#endif
#endif
