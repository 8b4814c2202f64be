/* Device opening and dispatch through the backend tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/device.h"
#include "device/backend.h"
#include "device/hostmem.h"
#include "device/scratch.h"
#include "forgia/elem/quant_decode.h"

bool fg_build_has_cuda(void) {
#ifdef FORGIA_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int fg_cuda_device_count(void) {
#ifdef FORGIA_HAVE_CUDA
  return fg_cuda_count();
#else
  return 0;
#endif
}

/* The device's own stream: impl NULL is the backend's default stream (CUDA's legacy stream). */
static fg_device *fg_device_new(void) {
  fg_device *d = calloc(1, sizeof *d);
  fg_stream *s = calloc(1, sizeof *s);
  if (!d || !s) {
    free(d);
    free(s);
    fg_fail(FG_ERR_NOMEM, "device: out of memory");
    return NULL;
  }
  s->dev = d;
  s->device_owned = true;
  d->stream = s;
  pthread_mutex_init(&d->blas_lock, NULL);
  pthread_mutex_init(&d->stream_lock, NULL);
  return d;
}

static void fg_device_delete(fg_device *d) {
  pthread_mutex_destroy(&d->blas_lock);
  pthread_mutex_destroy(&d->stream_lock);
  free(d->stream);
  free(d);
}

static fg_status fg_open_cpu(fg_device **out) {
  fg_device *d = fg_device_new();
  if (!d) return FG_ERR_NOMEM;
  d->be = &fg_cpu_backend;
  d->kind = FG_DEVICE_CPU;
  snprintf(d->spec, sizeof d->spec, "cpu");
  *out = d;
  return FG_OK;
}

static fg_status fg_open_cuda(int index, fg_device **out) {
#ifdef FORGIA_HAVE_CUDA
  int n = 0;
  fg_status ps = fg_cuda_probe(&n);
  if (ps) return ps;
  if (n <= 0) return fg_fail(FG_ERR_NO_DEVICE, "device cuda:%d: no CUDA device is present", index);
  if (index >= n) return fg_fail(FG_ERR_NO_DEVICE, "device cuda:%d: only %d CUDA device(s) present", index, n);
  fg_device *d = fg_device_new();
  if (!d) return FG_ERR_NOMEM;
  d->be = &fg_cuda_backend;
  d->kind = FG_DEVICE_CUDA;
  d->index = index;
  snprintf(d->spec, sizeof d->spec, "cuda:%d", index);
  fg_status s = fg_cuda_init_device(d);
  if (s) {
    fg_device_delete(d);
    return s;
  }
  *out = d;
  return FG_OK;
#else
  (void)out;
  return fg_fail(FG_ERR_NO_DEVICE, "device cuda:%d: this build of forgia has no CUDA backend (-DFORGIA_CUDA=OFF)", index);
#endif
}

static fg_status fg_open_spec(const char *spec, fg_device **out) {
  if (strcmp(spec, "cpu") == 0) return fg_open_cpu(out);
  if (strcmp(spec, "cuda") == 0) return fg_open_cuda(0, out);
  if (strncmp(spec, "cuda:", 5) == 0) {
    char *end;
    long idx = strtol(spec + 5, &end, 10);
    if (end == spec + 5 || *end || idx < 0 || idx > 1024)
      return fg_fail(FG_ERR_INVALID_ARG, "device '%s': expected cuda:N with N a device ordinal", spec);
    return fg_open_cuda((int)idx, out);
  }
  return fg_fail(FG_ERR_INVALID_ARG, "device '%s': expected cpu, cuda, cuda:N or auto", spec);
}

fg_status fg_device_open(const char *spec, fg_device **out) {
  if (!spec || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_device_open: NULL argument");
  *out = NULL;
  if (strcmp(spec, "auto") != 0) return fg_open_spec(spec, out);
  const char *env = getenv("FORGIA_DEVICE");
  if (env && *env && strcmp(env, "auto") != 0) {
    fg_status s = fg_open_spec(env, out);
    if (s) return fg_fail_prefix(s, "FORGIA_DEVICE: ");
    return s;
  }
  /* The library prints nothing: which device "auto" chose is fg_device_spec's answer, which
   * the CLI puts in each command's summary. */
  return fg_cuda_device_count() > 0 ? fg_open_cuda(0, out) : fg_open_cpu(out);
}

void fg_device_close(fg_device *dev) {
  if (!dev) return;
  if (dev->be->sync) dev->be->sync(dev);
  fg_stream_scratch_release(dev->stream);
  if (dev->be->close) dev->be->close(dev);
  fg_device_delete(dev);
}

fg_stream *fg_device_stream(fg_device *dev) { return dev ? dev->stream : NULL; }

fg_status fg_device_query(const fg_device *dev, fg_device_info *out) {
  if (!dev || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_device_query: NULL argument");
  memset(out, 0, sizeof *out);
  out->kind = dev->kind;
  out->index = dev->index;
  return dev->be->query((fg_device *)dev, out);
}

fg_device_kind fg_device_kind_of(const fg_device *dev) { return dev->kind; }
const char *fg_device_spec(const fg_device *dev) { return dev->spec; }

fg_status fg_device_mem_alloc(fg_device *dev, size_t bytes, void **out) {
  if (!dev || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_device_mem_alloc: NULL argument");
  return dev->be->alloc(dev, bytes, out);
}

void fg_device_mem_free(fg_device *dev, void *ptr) {
  if (dev && ptr) dev->be->free(dev, ptr);
}

fg_status fg_device_memset(fg_device *dev, void *ptr, int value, size_t bytes) {
  if (!bytes) return FG_OK;
  if (!dev || !ptr) return fg_fail(FG_ERR_INVALID_ARG, "fg_device_memset: NULL argument");
  return dev->be->memset(dev, ptr, value, bytes);
}

static fg_status fg_check_copy(const fg_device *dev, const void *dst, const void *src, size_t bytes,
                               fg_copy_kind kind) {
  if (!dev || (bytes && (!dst || !src))) return fg_fail(FG_ERR_INVALID_ARG, "device copy: NULL argument");
  if ((unsigned)kind > FG_COPY_D2D) return fg_fail(FG_ERR_INVALID_ARG, "device copy: bad direction %d", (int)kind);
  return FG_OK;
}

fg_status fg_device_copy(fg_device *dev, void *dst, const void *src, size_t bytes, fg_copy_kind kind) {
  fg_status s = fg_check_copy(dev, dst, src, bytes, kind);
  if (s || !bytes) return s;
  return dev->be->copy(dev, dst, src, bytes, kind, NULL);
}

fg_status fg_device_copy_async(fg_device *dev, void *dst, const void *src, size_t bytes, fg_copy_kind kind,
                               fg_stream *st) {
  fg_status s = fg_check_copy(dev, dst, src, bytes, kind);
  if (s || !bytes) return s;
  return dev->be->copy(dev, dst, src, bytes, kind, st ? st->impl : NULL);
}

fg_status fg_device_sync(fg_device *dev) {
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "fg_device_sync: NULL device");
  return dev->be->sync(dev);
}

fg_status fg_device_pinned_alloc(fg_device *dev, size_t bytes, int numa_node, void **out) {
  if (!dev || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_device_pinned_alloc: NULL argument");
  void *p;
  fg_status s = fg_hostmem_alloc(bytes, numa_node, &p);
  if (s) return s;
  if (dev->be->host_register) {
    s = dev->be->host_register(dev, p, bytes); /* page-locks p for async copies */
    if (s) {
      fg_hostmem_free(p);
      return s;
    }
  }
  *out = p;
  return FG_OK;
}

void fg_device_pinned_free(fg_device *dev, void *ptr) {
  if (!dev || !ptr) return;
  if (dev->be->host_unregister) dev->be->host_unregister(dev, ptr);
  fg_hostmem_free(ptr);
}

fg_status fg_stream_create(fg_device *dev, fg_stream **out) {
  if (!dev || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_stream_create: NULL argument");
  fg_stream *s = calloc(1, sizeof *s);
  if (!s) return fg_fail(FG_ERR_NOMEM, "stream: out of memory");
  s->dev = dev;
  fg_status st = dev->be->stream_create(dev, &s->impl);
  if (st) {
    free(s);
    return st;
  }
  *out = s;
  return FG_OK;
}

void fg_stream_free(fg_stream *s) {
  if (!s || s->device_owned) return;
  /* Queued work may still read the scratch and staging buffers. */
  if (s->scratch || s->stage[0] || s->stage[1]) s->dev->be->stream_sync(s->dev, s->impl);
  fg_stream_scratch_release(s);
  s->dev->be->stream_destroy(s->dev, s->impl);
  free(s);
}

fg_status fg_stream_sync(fg_stream *s) {
  if (!s) return fg_fail(FG_ERR_INVALID_ARG, "fg_stream_sync: NULL stream");
  return s->dev->be->stream_sync(s->dev, s->impl);
}

fg_status fg_event_create(fg_device *dev, fg_event **out) {
  if (!dev || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_event_create: NULL argument");
  fg_event *e = calloc(1, sizeof *e);
  if (!e) return fg_fail(FG_ERR_NOMEM, "event: out of memory");
  e->dev = dev;
  fg_status st = dev->be->event_create(dev, &e->impl);
  if (st) {
    free(e);
    return st;
  }
  *out = e;
  return FG_OK;
}

void fg_event_free(fg_event *e) {
  if (!e) return;
  e->dev->be->event_destroy(e->dev, e->impl);
  free(e);
}

fg_status fg_event_record(fg_event *e, fg_stream *s) {
  if (!e) return fg_fail(FG_ERR_INVALID_ARG, "fg_event_record: NULL event");
  if (s && s->dev != e->dev) return fg_fail(FG_ERR_INVALID_ARG, "fg_event_record: stream and event on different devices");
  return e->dev->be->event_record(e->dev, e->impl, s ? s->impl : NULL);
}

fg_status fg_event_sync(fg_event *e) {
  if (!e) return fg_fail(FG_ERR_INVALID_ARG, "fg_event_sync: NULL event");
  return e->dev->be->event_sync(e->dev, e->impl);
}

fg_status fg_event_query(fg_event *e, bool *done) {
  if (!e || !done) return fg_fail(FG_ERR_INVALID_ARG, "fg_event_query: NULL argument");
  return e->dev->be->event_query(e->dev, e->impl, done);
}

fg_status fg_stream_wait_event(fg_stream *s, fg_event *e) {
  if (!s || !e) return fg_fail(FG_ERR_INVALID_ARG, "fg_stream_wait_event: NULL argument");
  return s->dev->be->stream_wait(s->dev, s->impl, e->impl);
}

fg_status fg_event_elapsed_ms(fg_event *a, fg_event *b, float *ms) {
  if (!a || !b || !ms || a->dev != b->dev) return fg_fail(FG_ERR_INVALID_ARG, "fg_event_elapsed_ms: bad arguments");
  return a->dev->be->event_elapsed(a->dev, a->impl, b->impl, ms);
}

/* A block type converts to f32 when elem/quant_decode.h has a decoder for it; asking the
 * decoder itself (on a zero block) keeps that the only list of decodable types. */
static bool fg_decodable(fg_dtype st) {
  const fg_dtype_traits *tr = fg_dtype_info(st);
  if (!tr || !tr->is_quant || tr->block_elems > 256 || tr->block_bytes > 512) return false;
  uint8_t zero[512] = {0};
  float y[256];
  return fg_dequant_block(st, zero, y);
}

static bool fg_convert_pair_ok(fg_dtype dt, fg_dtype st) {
  if (st == FG_F32) return dt == FG_F32 || dt == FG_F16 || dt == FG_BF16;
  return dt == FG_F32 && (st == FG_F16 || st == FG_BF16 || fg_decodable(st));
}

fg_status fg_convert(fg_device *dev, void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n, fg_stream *s) {
  if (!dev || (n && (!dst || !src))) return fg_fail(FG_ERR_INVALID_ARG, "fg_convert: NULL argument");
  if (!fg_convert_pair_ok(dt, st))
    return fg_fail(FG_ERR_UNSUPPORTED, "fg_convert: %s -> %s is not an elementwise conversion", fg_dtype_name(st),
                   fg_dtype_name(dt));
  if (fg_dtype_info(st)->block_elems > 1 && n % fg_dtype_info(st)->block_elems)
    return fg_fail(FG_ERR_BAD_ROW, "fg_convert: %zu elements of %s are not a whole number of %u-element blocks", n,
                   fg_dtype_name(st), fg_dtype_info(st)->block_elems);
  if (!n) return FG_OK;
  return dev->be->convert(dev, dst, dt, src, st, n, s ? s->impl : NULL);
}
