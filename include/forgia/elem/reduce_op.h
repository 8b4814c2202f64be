/* The reductions of the fixed grid (elem/reduce.h), alone so that the public header
 * (forgia/reduce.h) names them without pulling in the grid's functions. The values are
 * part of the ABI. */
#ifndef FORGIA_ELEM_REDUCE_OP_H
#define FORGIA_ELEM_REDUCE_OP_H

typedef enum fg_reduce_op {
  FG_REDUCE_SUM = 0,    /* sum of the values */
  FG_REDUCE_SUMSQ = 1,  /* sum of their squares (Fucina's sumSquares) */
  FG_REDUCE_MAXABS = 2, /* largest absolute value (0 for no values) */
  FG_REDUCE_OP_COUNT = 3
} fg_reduce_op;

#endif
