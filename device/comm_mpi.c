/* The MPI backend of forgia/comm.h. Compiled only when MPI was found (FORGIA_HAVE_MPI).
 *
 * Each communicator is a duplicate of MPI_COMM_WORLD, so its traffic never matches the
 * caller's own messages, with MPI_ERRORS_RETURN so a failed call comes back as a status.
 * The all-reduce gathers every rank's chunk to every rank and sums in rank order on the
 * host, never MPI_SUM, whose order (and so whose bits) the implementation picks. */
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "device/comm_backend.h"

/* MPI's initialisation is the process's, not a communicator's: whether fg_comm_open
 * initialised it (then the last fg_comm_close finalises it) and how many MPI communicators
 * are open. */
static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int mpi_open_count;
static bool mpi_we_initialised;

/* The all-reduce's gather is cut into chunks of at most this many bytes over all ranks, so
 * its scratch stays small whatever the buffer. */
#define FG_COMM_MPI_CHUNK_BYTES ((size_t)4 << 20)

typedef struct mpi_impl {
  MPI_Comm comm;
  float *scratch; /* the all-reduce's gathered chunks, then its packed send chunk; grows */
  size_t scratch_floats;
} mpi_impl;

static fg_status mpi_fail(int rc, const char *what) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) len = 0;
  msg[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] = '\0';
  return fg_fail(FG_ERR_IO, "%s failed: %s (MPI error %d)", what, len ? msg : "no message", rc);
}

static fg_status mpi_allgather(fg_comm *c, const float *mine, const uint64_t *counts, const uint64_t *displs,
                               uint64_t total, float *all) {
  mpi_impl *m = c->impl;
  const bool in_place = mine == all + displs[c->rank];
  if (total <= (uint64_t)INT_MAX) {
    int *ic = malloc(2 * (size_t)c->size * sizeof *ic);
    if (!ic) return fg_fail(FG_ERR_NOMEM, "fg_comm_allgather_f32: out of memory for %d counts", c->size);
    int *id = ic + c->size;
    for (int r = 0; r < c->size; r++) ic[r] = (int)counts[r], id[r] = (int)displs[r];
    const int rc = MPI_Allgatherv(in_place ? MPI_IN_PLACE : mine, ic[c->rank], MPI_FLOAT, all, ic, id, MPI_FLOAT,
                                  m->comm);
    free(ic);
    return rc == MPI_SUCCESS ? FG_OK : mpi_fail(rc, "MPI_Allgatherv");
  }
  /* More values than MPI's int counts reach: each rank broadcasts its part in pieces. */
  if (!in_place && counts[c->rank]) memcpy(all + displs[c->rank], mine, (size_t)counts[c->rank] * sizeof(float));
  for (int r = 0; r < c->size; r++) {
    for (uint64_t off = 0; off < counts[r];) {
      const uint64_t left = counts[r] - off;
      const int len = left > (uint64_t)INT_MAX ? INT_MAX : (int)left;
      const int rc = MPI_Bcast(all + displs[r] + off, len, MPI_FLOAT, r, m->comm);
      if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Bcast (all-gather)");
      off += (uint64_t)len;
    }
  }
  return FG_OK;
}

/* Chunks of len floats: each rank packs slice [off, off + len) of its nparts parts into
 * send, the all-gather lays every rank's packs end to end (rank r's part p at row
 * r * nparts + p), and the rows are added in order. */
static fg_status mpi_allreduce(fg_comm *c, const float *parts, size_t nparts, size_t n, float *out) {
  mpi_impl *m = c->impl;
  if (!n) return FG_OK;
  if (nparts > (size_t)INT_MAX / (size_t)c->size)
    return fg_fail(FG_ERR_OVERFLOW, "fg_comm_allreduce_sum_f32: %d ranks x %zu parts do not fit MPI's counts", c->size,
                   nparts);
  const size_t rows = (size_t)c->size * nparts;
  size_t chunk = FG_COMM_MPI_CHUNK_BYTES / sizeof(float) / rows;
  if (chunk == 0) chunk = 1;
  if (chunk > n) chunk = n;
  if (nparts * chunk > (size_t)INT_MAX) chunk = (size_t)INT_MAX / nparts; /* MPI counts are ints */
  const size_t need = (rows + (nparts > 1 ? nparts : 0)) * chunk;
  if (need > m->scratch_floats) {
    float *grown = realloc(m->scratch, need * sizeof(float));
    if (!grown) return fg_fail(FG_ERR_NOMEM, "fg_comm_allreduce_sum_f32: out of memory for %zu floats of scratch", need);
    m->scratch = grown;
    m->scratch_floats = need;
  }
  float *gathered = m->scratch, *send = m->scratch + rows * chunk;
  for (size_t off = 0; off < n; off += chunk) {
    const size_t len = n - off < chunk ? n - off : chunk;
    const float *src = parts + off;
    if (nparts > 1) {
      for (size_t p = 0; p < nparts; p++) memcpy(send + p * len, parts + p * n + off, len * sizeof(float));
      src = send;
    }
    const int cnt = (int)(nparts * len);
    const int rc = MPI_Allgather(src, cnt, MPI_FLOAT, gathered, cnt, MPI_FLOAT, m->comm);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Allgather (all-reduce)");
    fg_comm_sum_ranks(out + off, gathered, rows, len);
  }
  return FG_OK;
}

static fg_status mpi_broadcast(fg_comm *c, void *buf, size_t bytes, int root) {
  mpi_impl *m = c->impl;
  for (size_t off = 0; off < bytes;) {
    const size_t left = bytes - off;
    const int len = left > (size_t)INT_MAX ? INT_MAX : (int)left;
    const int rc = MPI_Bcast((char *)buf + off, len, MPI_BYTE, root, m->comm);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Bcast");
    off += (size_t)len;
  }
  return FG_OK;
}

static fg_status mpi_barrier(fg_comm *c) {
  const int rc = MPI_Barrier(((mpi_impl *)c->impl)->comm);
  return rc == MPI_SUCCESS ? FG_OK : mpi_fail(rc, "MPI_Barrier");
}

static void mpi_release(mpi_impl *m) {
  if (m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
  free(m->scratch);
  free(m);
  pthread_mutex_lock(&mpi_lock);
  if (--mpi_open_count == 0 && mpi_we_initialised) MPI_Finalize();
  pthread_mutex_unlock(&mpi_lock);
}

static void mpi_close(fg_comm *c) { mpi_release(c->impl); }

static const fg_comm_backend mpi_backend = {
    .kind = FG_COMM_MPI,
    .allgather_f32 = mpi_allgather,
    .allreduce_sum_f32 = mpi_allreduce,
    .broadcast = mpi_broadcast,
    .barrier = mpi_barrier,
    .close = mpi_close,
};

/* Initialises MPI when nobody has and counts one more open communicator. */
static fg_status mpi_enter(void) {
  fg_status st = FG_OK;
  pthread_mutex_lock(&mpi_lock);
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (fin) {
    st = fg_fail(FG_ERR_STATE, "fg_comm_open: MPI was already finalised in this process (it cannot start twice; "
                               "keep one MPI communicator open for the whole run)");
  } else if (!init) {
    /* SERIALIZED: a communicator may move between threads, one at a time (comm.h). */
    int provided = 0;
    const int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) st = mpi_fail(rc, "MPI_Init_thread");
    else mpi_we_initialised = true;
  }
  if (!st) mpi_open_count++;
  pthread_mutex_unlock(&mpi_lock);
  return st;
}

fg_status fg_comm_mpi_open(fg_comm **out) {
  fg_status st = mpi_enter();
  if (st) return st;
  mpi_impl *m = calloc(1, sizeof *m);
  if (!m) {
    st = fg_fail(FG_ERR_NOMEM, "fg_comm_open: out of memory for an MPI communicator");
    pthread_mutex_lock(&mpi_lock);
    if (--mpi_open_count == 0 && mpi_we_initialised) MPI_Finalize();
    pthread_mutex_unlock(&mpi_lock);
    return st;
  }
  m->comm = MPI_COMM_NULL;
  int rank = 0, size = 0, rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
  if (rc != MPI_SUCCESS) m->comm = MPI_COMM_NULL;
  if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(m->comm, &rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(m->comm, &size);
  if (rc != MPI_SUCCESS) {
    st = mpi_fail(rc, "fg_comm_open: duplicating MPI_COMM_WORLD");
    mpi_release(m);
    return st;
  }
  st = fg_comm_new(&mpi_backend, rank, size, m, out);
  if (st) mpi_release(m);
  return st;
}
