/* The two-spirals data set and the pieces of its MLP's forward pass, shared by the gradient
 * example (train_spirals.c) and the evolution-strategies example (es_spirals.c): both learn
 * the same points, and both run their layers over the library's exact GEMM and op layer, so
 * a forward pass is the same bits on every device and for any thread count. */
#ifndef FORGIA_TOOLS_TRAIN_SPIRALS_NET_H
#define FORGIA_TOOLS_TRAIN_SPIRALS_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/forgia.h"

#define SPIRALS_POINTS_PER_CLASS 100
#define SPIRALS_POINTS (2 * SPIRALS_POINTS_PER_CLASS)

/* Two interleaved spirals of 1.5 turns, radius growing from 0.1 to 1, with gaussian noise of
 * 0.02 from the stream fg_rng_at(seed, 0). Point i of class c is row 2i + c: xy[2 * row] and
 * xy[2 * row + 1], labels[row] = c. */
fg_status spirals_make_data(uint64_t seed, float xy[2 * SPIRALS_POINTS], int32_t labels[SPIRALS_POINTS]);

/* One layer over SPIRALS_POINTS rows on dev: out = in W^T + 1 b^T (W [out_f, in_f], the bias
 * added by a rank-1 GEMM with ones, a column of SPIRALS_POINTS ones), then ReLU in place
 * when relu. Every pointer is device memory of dev; s as fg_gemm takes it (NULL: the
 * device's own stream; a worker thread passes its own, since the CPU's exact GEMM works in
 * the stream's scratch). */
fg_status spirals_linear(fg_device *dev, fg_stream *s, const float *in, size_t in_f, const float *w, const float *b,
                         const float *ones, float *out, size_t out_f, bool relu);

/* Softmax cross-entropy over the two logits of each row, on the host: the mean loss (f64)
 * and the number of correct predictions (class 1 when logit 1 > logit 0); with dlogits
 * (NULL: not wanted), the gradient (softmax - onehot) / SPIRALS_POINTS. */
void spirals_loss(const float logits[2 * SPIRALS_POINTS], const int32_t labels[SPIRALS_POINTS], double *loss,
                  uint32_t *correct, float *dlogits);

#endif
