/* PTQTP group solver internals shared by formats/ptqtp.c and formats/ptqtp_solve.c. */
#ifndef FORGIA_PTQTP_INTERNAL_H
#define FORGIA_PTQTP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/ptqtp.h"

typedef struct fg_ptqtp_group {
  float alpha[3];  /* as solved, signs kept; 0 past K */
  int iterations;
  bool converged;
} fg_ptqtp_group;

/* Solves one group of n elements (options already checked): t[k][0..n) for k < K. */
fg_ptqtp_group fg_ptqtp_solve(const float *w, size_t n, int8_t *const t[3], const fg_ptqtp_options *o);

/* The topology step: per element the trit tuple of least squared error against alpha, in
 * the pinned candidate order; non-finite elements get 0 in every plane. */
void fg_ptqtp_search(int k, const float *w, size_t n, int8_t *const t[3], const float alpha[3]);

#endif
