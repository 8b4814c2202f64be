/* Communicators (forgia/comm.h): the front that validates every call once, the share
 * arithmetic, AUTO's choice, and the single-process backend. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device/comm_backend.h"
#include "forgia/comm.h"

const char *fg_comm_kind_name(fg_comm_kind k) {
  switch (k) {
    case FG_COMM_AUTO: return "auto";
    case FG_COMM_SINGLE: return "single";
    case FG_COMM_MPI: return "mpi";
    case FG_COMM_NCCL: return "nccl";
  }
  return NULL;
}

bool fg_comm_available(fg_comm_kind k) {
  switch (k) {
    case FG_COMM_AUTO:
    case FG_COMM_SINGLE: return true;
#ifdef FORGIA_HAVE_MPI
    case FG_COMM_MPI: return true;
#endif
#ifdef FORGIA_HAVE_NCCL
    case FG_COMM_NCCL: return true;
#endif
    default: return false;
  }
}

void fg_comm_share(uint64_t n, int rank, int size, uint64_t *first, uint64_t *count) {
  uint64_t f = 0, k = 0;
  if (size > 0 && rank >= 0 && rank < size) {
    const uint64_t base = n / (uint64_t)size, extra = n % (uint64_t)size, r = (uint64_t)rank;
    /* r * (base + 1) <= n for r < extra, and extra * (base + 1) + (r - extra) * base <= n:
     * no overflow for any n. */
    f = r < extra ? r * (base + 1) : extra * (base + 1) + (r - extra) * base;
    k = base + (r < extra ? 1 : 0);
  }
  if (first) *first = f;
  if (count) *count = k;
}

void fg_comm_sum_ranks(float *out, const float *rows, size_t nrows, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float acc = rows[i];
    for (size_t r = 1; r < nrows; r++) acc = acc + rows[r * n + i];
    out[i] = acc;
  }
}

fg_status fg_comm_new(const fg_comm_backend *be, int rank, int size, void *impl, fg_comm **out) {
  fg_comm *c = calloc(1, sizeof *c);
  if (!c) return fg_fail(FG_ERR_NOMEM, "fg_comm_open: out of memory for a %s communicator", fg_comm_kind_name(be->kind));
  c->be = be;
  c->rank = rank;
  c->size = size;
  c->impl = impl;
  *out = c;
  return FG_OK;
}

/* The single process: every collective is a copy (or nothing when the buffers coincide). */
static fg_status single_allgather(fg_comm *c, const float *mine, const uint64_t *counts, const uint64_t *displs,
                                  uint64_t total, float *all) {
  (void)c, (void)displs, (void)total;
  if (counts[0] && all != mine) memmove(all, mine, (size_t)counts[0] * sizeof(float));
  return FG_OK;
}

static fg_status single_allreduce(fg_comm *c, const float *parts, size_t nparts, size_t n, float *out) {
  (void)c;
  /* One rank, one part: that buffer, bit for bit. */
  if (nparts == 1) {
    if (out != parts && n) memmove(out, parts, n * sizeof(float));
    return FG_OK;
  }
  fg_comm_sum_ranks(out, parts, nparts, n);
  return FG_OK;
}

static fg_status single_broadcast(fg_comm *c, void *buf, size_t bytes, int root) {
  (void)c, (void)buf, (void)bytes, (void)root; /* the root's bytes are already there */
  return FG_OK;
}

static fg_status single_barrier(fg_comm *c) {
  (void)c;
  return FG_OK;
}

static const fg_comm_backend single_backend = {
    .kind = FG_COMM_SINGLE,
    .allgather_f32 = single_allgather,
    .allreduce_sum_f32 = single_allreduce,
    .broadcast = single_broadcast,
    .barrier = single_barrier,
    .close = NULL,
};

/* Launchers announce the world size in the environment: Open MPI, MPICH/Hydra and Slurm's
 * PMI, PMIx, MVAPICH. Returns the first one set (its name in *var), else 1. */
static long launcher_size(const char **var) {
  static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = getenv(names[i]);
    if (!v || !*v) continue;
    char *end;
    errno = 0;
    const long n = strtol(v, &end, 10);
    if (errno || *end || n < 1) continue; /* not a size a launcher writes: not a launcher */
    *var = names[i];
    return n;
  }
  return 1;
}

fg_status fg_comm_open(fg_comm_kind kind, fg_comm **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_open: NULL out");
  *out = NULL;
  if (kind == FG_COMM_AUTO) {
    const char *var = NULL;
    const long n = launcher_size(&var);
    if (n > 1) {
      /* Several ranks each running a whole single-process job would repeat the work and
       * race on the same outputs: refuse rather than guess. */
      if (!fg_comm_available(FG_COMM_MPI))
        return fg_fail(FG_ERR_UNSUPPORTED,
                       "fg_comm_open: started by an MPI launcher with %ld ranks (%s), but this build has no MPI "
                       "backend (configure with libopenmpi-dev installed, FORGIA_MPI=AUTO or ON)",
                       n, var);
      kind = FG_COMM_MPI;
    } else {
      kind = FG_COMM_SINGLE;
    }
  }
  switch (kind) {
    case FG_COMM_SINGLE: return fg_comm_new(&single_backend, 0, 1, NULL, out);
    case FG_COMM_MPI:
#ifdef FORGIA_HAVE_MPI
      return fg_comm_mpi_open(out);
#else
      return fg_fail(FG_ERR_UNSUPPORTED, "fg_comm_open: this build has no MPI backend (MPI was not found at configure time)");
#endif
    case FG_COMM_NCCL:
      return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_open: an NCCL communicator needs a CUDA device: use fg_comm_open_nccl");
    default: return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_open: unknown communicator kind %d", (int)kind);
  }
}

fg_status fg_comm_open_nccl(fg_device *dev, fg_comm **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_open_nccl: NULL out");
  *out = NULL;
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_open_nccl: NULL device");
#ifdef FORGIA_HAVE_NCCL
  return fg_comm_nccl_open(dev, out);
#else
  return fg_fail(FG_ERR_UNSUPPORTED, "fg_comm_open_nccl: this build has no NCCL backend (NCCL %s)",
                 fg_build_has_cuda() ? "was not found at configure time" : "needs the CUDA backend");
#endif
}

void fg_comm_close(fg_comm *c) {
  if (!c) return;
  if (c->be->close) c->be->close(c);
  free(c);
}

fg_comm_kind fg_comm_kind_of(const fg_comm *c) { return c ? c->be->kind : FG_COMM_AUTO; }
int fg_comm_rank(const fg_comm *c) { return c ? c->rank : -1; }
int fg_comm_size(const fg_comm *c) { return c ? c->size : 0; }

fg_status fg_comm_allgather_f32(fg_comm *c, const float *mine, const uint64_t *counts, float *all) {
  const char *what = "fg_comm_allgather_f32";
  if (!c || !counts) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, c ? "counts" : "communicator");
  uint64_t *displs = malloc((size_t)c->size * sizeof *displs);
  if (!displs) return fg_fail(FG_ERR_NOMEM, "%s: out of memory for %d displacements", what, c->size);
  uint64_t total = 0;
  for (int r = 0; r < c->size; r++) {
    displs[r] = total;
    if (counts[r] > (uint64_t)(SIZE_MAX / sizeof(float)) - total) {
      free(displs);
      return fg_fail(FG_ERR_OVERFLOW, "%s: the counts overflow at rank %d", what, r);
    }
    total += counts[r];
  }
  fg_status st = FG_OK;
  if (counts[c->rank] && !mine)
    st = fg_fail(FG_ERR_INVALID_ARG, "%s: NULL mine with %llu values on rank %d", what,
                 (unsigned long long)counts[c->rank], c->rank);
  else if (total && !all)
    st = fg_fail(FG_ERR_INVALID_ARG, "%s: NULL all for %llu values", what, (unsigned long long)total);
  else if (total && counts[c->rank] && mine != all + displs[c->rank] &&
           (const char *)mine < (const char *)(all + total) &&
           (const char *)all < (const char *)(mine + counts[c->rank]))
    st = fg_fail(FG_ERR_INVALID_ARG, "%s: mine overlaps all other than at this rank's place", what);
  else
    st = c->be->allgather_f32(c, mine, counts, displs, total, all);
  free(displs);
  return st;
}

fg_status fg_comm_allreduce_sum_f32(fg_comm *c, float *buf, size_t n) {
  if (!c) return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_allreduce_sum_f32: NULL communicator");
  if (n && !buf) return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_allreduce_sum_f32: NULL buffer of %zu floats", n);
  if (n > SIZE_MAX / sizeof(float)) return fg_fail(FG_ERR_OVERFLOW, "fg_comm_allreduce_sum_f32: %zu floats overflow", n);
  return c->be->allreduce_sum_f32(c, buf, 1, n, buf);
}

fg_status fg_comm_allreduce_parts_f32(fg_comm *c, const float *parts, size_t nparts, size_t n, float *out) {
  const char *what = "fg_comm_allreduce_parts_f32";
  if (!c) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL communicator", what);
  if (nparts < 1) return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu parts (at least 1)", what, nparts);
  if (n > SIZE_MAX / sizeof(float) / nparts)
    return fg_fail(FG_ERR_OVERFLOW, "%s: %zu parts of %zu floats overflow", what, nparts, n);
  if (n && (!parts || !out)) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, !parts ? "parts" : "out");
  const bool in_place = nparts == 1 && out == parts;
  if (n && !in_place && (const char *)out < (const char *)(parts + nparts * n) && (const char *)parts < (const char *)(out + n))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: out overlaps parts (only one part may be reduced in place)", what);
  return c->be->allreduce_sum_f32(c, parts, nparts, n, out);
}

fg_status fg_comm_broadcast(fg_comm *c, void *buf, size_t bytes, int root) {
  if (!c) return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_broadcast: NULL communicator");
  if (root < 0 || root >= c->size)
    return fg_fail(FG_ERR_RANGE, "fg_comm_broadcast: root %d outside the %d ranks", root, c->size);
  if (bytes && !buf) return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_broadcast: NULL buffer of %zu bytes", bytes);
  return c->be->broadcast(c, buf, bytes, root);
}

fg_status fg_comm_barrier(fg_comm *c) {
  if (!c) return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_barrier: NULL communicator");
  return c->be->barrier(c);
}
