/* forgia load: stream a checkpoint onto a device and say how fast that went; with --bench,
 * next to the limits measured in the same run on the same files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "util_ckpt.h"
#include "util_limits.h"
#include "forgia/forgia.h"
#include "forgia/load.h"

const char fg_cmd_load_summary[] = "load a GGUF/safetensors checkpoint onto a device and report GB/s";

static void usage(FILE *f) {
  fprintf(f,
          "usage: forgia load PATH [--device cpu|cuda|cuda:N] [--only REGEX] [--dtype keep|f32|bf16|f16|dequant]\n"
          "                        [--ring N,SIZE] [--lazy] [--list] [--bench]\n"
          "\n"
          "PATH is a GGUF file, part 1 of a split GGUF, a safetensors file or a Hugging Face directory.\n"
          "  --device   target (default auto: the first GPU when present, else the CPU)\n"
          "  --only     load only tensors whose name matches the POSIX extended REGEX\n"
          "  --dtype    keep stored dtypes (default); f32 widens f16/bf16 and dequantizes block types;\n"
          "             bf16/f16 narrow float tensors; dequant only dequantizes block types\n"
          "  --ring     staging ring: N pinned buffers of SIZE bytes (K/M/G suffixes), default 4,16M\n"
          "  --lazy     CPU: borrow kept tensors without reading their pages\n"
          "  --list     print every loaded tensor (name, dtype, shape, bytes)\n"
          "  --bench    also measure page-cache read(), memcpy and (GPU) pinned host-to-device\n"
          "             bandwidth in this run and print the load's ratio to each\n");
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  unsigned long long mul = 1;
  if (*end == 'K' || *end == 'k') mul = 1ull << 10, end++;
  else if (*end == 'M' || *end == 'm') mul = 1ull << 20, end++;
  else if (*end == 'G' || *end == 'g') mul = 1ull << 30, end++;
  if (*end == 'i' || *end == 'B') end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
  if (*end || v > SIZE_MAX / mul) return -1;
  *out = (size_t)(v * mul);
  return 0;
}

static bool regex_filter(const fg_load_tensor_info *t, void *user) {
  return regexec((const regex_t *)user, t->name, 0, NULL, 0) == 0;
}

typedef struct bar {
  double last;
  bool shown;
} bar;

static bool show_progress(const fg_load_progress *p, void *user) {
  bar *b = user;
  double t = fg_clock_seconds();
  bool end = p->bytes_done >= p->bytes_total && p->tensors_done >= p->tensors_total;
  if (!end && t - b->last < 0.1) return true;
  b->last = t;
  b->shown = true;
  double frac = p->bytes_total ? (double)p->bytes_done / (double)p->bytes_total : 1.0;
  char cells[31];
  int full = (int)(frac * 30.0);
  for (int i = 0; i < 30; i++) cells[i] = i < full ? '#' : '.';
  cells[30] = '\0';
  fprintf(stderr, "\r[%s] %3.0f%% %llu/%llu tensors %.2f/%.2f GB %.2f GB/s ", cells, frac * 100.0,
          (unsigned long long)p->tensors_done, (unsigned long long)p->tensors_total, (double)p->bytes_done / 1e9,
          (double)p->bytes_total / 1e9, p->seconds > 0 ? (double)p->bytes_done / p->seconds / 1e9 : 0.0);
  fflush(stderr);
  return true;
}

static void print_shape(const fg_model_tensor *t) {
  printf("[");
  for (int d = 0; d < t->ndim; d++) printf("%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
  printf("]");
}

/* ---- --bench limits: tools/util_limits.c ------------------------------------------------ */

static int bench_read(const fg_model *m, double *gbs) {
  const char *paths[256];
  uint32_t n = fg_model_file_count(m) < 256 ? fg_model_file_count(m) : 256;
  for (uint32_t i = 0; i < n; i++) paths[i] = fg_model_file_path(m, i);
  *gbs = fg_cli_read_gbs(paths, n);
  return *gbs < 0 ? -1 : 0;
}

/* ---- the command ------------------------------------------------------------------------- */

typedef struct args {
  const char *path, *device, *only, *dtype;
  uint32_t ring_count;
  size_t ring_bytes;
  bool bench, list, lazy;
} args;

static int parse(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  a->device = "auto";
  a->dtype = "keep";
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    bool more = i + 1 < argc;
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(s, "--device") == 0 && more) {
      a->device = argv[++i];
    } else if (strcmp(s, "--only") == 0 && more) {
      a->only = argv[++i];
    } else if (strcmp(s, "--dtype") == 0 && more) {
      a->dtype = argv[++i];
    } else if (strcmp(s, "--ring") == 0 && more) {
      const char *v = argv[++i], *comma = strchr(v, ',');
      char *end;
      unsigned long n = strtoul(v, &end, 10);
      if (!comma || end != comma || n == 0 || n > FG_LOAD_RING_MAX_COUNT || parse_size(comma + 1, &a->ring_bytes)) {
        fprintf(stderr, "forgia load: --ring wants N,SIZE (e.g. 4,16M), got '%s'\n", v);
        usage(stderr);
        return 2;
      }
      a->ring_count = (uint32_t)n;
    } else if (strcmp(s, "--bench") == 0) {
      a->bench = true;
    } else if (strcmp(s, "--list") == 0) {
      a->list = true;
    } else if (strcmp(s, "--lazy") == 0) {
      a->lazy = true;
    } else if (s[0] == '-' && s[1] != '\0') {
      fprintf(stderr, "forgia load: unknown or incomplete option '%s'\n", s);
      usage(stderr);
      return 2;
    } else if (!a->path) {
      a->path = s;
    } else {
      fprintf(stderr, "forgia load: more than one PATH ('%s', '%s')\n", a->path, s);
      usage(stderr);
      return 2;
    }
  }
  if (!a->path) {
    fprintf(stderr, "forgia load: missing PATH\n");
    usage(stderr);
    return 2;
  }
  return -1;
}

static fg_status load_once(const args *a, fg_device *dev, const fg_load_options *o, fg_model **m, bool bar_on) {
  bar b = {0, false};
  fg_load_options oo = *o;
  if (bar_on) {
    oo.progress = show_progress;
    oo.progress_user = &b;
  }
  fg_status s = fg_load(a->path, dev, &oo, m);
  if (b.shown) fprintf(stderr, "\n");
  return s;
}

/* Bytes the load actually read: stats count every loaded tensor's stored bytes, but with
 * --lazy the borrowed ones are mapped and never touched. */
static uint64_t bytes_touched(const fg_load_stats *st, bool lazy) {
  if (!lazy) return st->bytes_read;
  return st->bytes_borrowed < st->bytes_read ? st->bytes_read - st->bytes_borrowed : 0;
}

/* GB/s over the bytes read; negative when nothing was read (no bandwidth to speak of). */
static double load_gbs(const fg_load_stats *st, bool lazy) {
  uint64_t b = bytes_touched(st, lazy);
  return b && st->seconds > 0 ? (double)b / st->seconds / 1e9 : -1.0;
}

static void report(const char *label, const fg_model *m, fg_device *dev, const fg_load_options *o, bool lazy) {
  const fg_load_stats *st = fg_model_stats(m);
  double gbs = load_gbs(st, lazy);
  printf("%s: %llu tensors (%llu skipped), %llu bytes read, %llu bytes on %s, %llu borrowed%s, %.4f s",
         label, (unsigned long long)st->tensors, (unsigned long long)st->tensors_skipped,
         (unsigned long long)bytes_touched(st, lazy), (unsigned long long)st->bytes_owned, fg_device_spec(dev),
         (unsigned long long)st->bytes_borrowed, lazy && st->bytes_borrowed ? " unread (--lazy)" : "", st->seconds);
  if (gbs >= 0)
    printf(", %.3f GB/s\n", gbs);
  else
    printf(", no bandwidth (nothing was read)\n");
  if (st->staged)
    printf("%s: ring %u x %zu bytes (setup %.4f s), NUMA node %d, dtype policy %s\n", label, st->ring_count,
           st->ring_bytes, st->ring_seconds, st->numa_node, fg_load_dtype_name(o->dtype));
}

int fg_cmd_load(int argc, char **argv) {
  args a;
  int rc = parse(argc, argv, &a);
  if (rc >= 0) return rc;
  fg_load_options o;
  fg_load_options_init(&o);
  if (fg_load_dtype_from_name(a.dtype, &o.dtype) != FG_OK) {
    fprintf(stderr, "forgia load: %s\n", fg_last_error());
    usage(stderr);
    return 2;
  }
  regex_t re;
  if (a.only) {
    int e = regcomp(&re, a.only, REG_EXTENDED | REG_NOSUB);
    if (e) {
      char msg[256];
      regerror(e, &re, msg, sizeof msg);
      fprintf(stderr, "forgia load: --only '%s': %s\n", a.only, msg);
      return 2;
    }
    o.filter = regex_filter;
    o.filter_user = &re;
  }
  o.ring_count = a.ring_count;
  o.ring_bytes = a.ring_bytes;
  if (a.lazy) o.flags |= FG_LOAD_FLAG_LAZY;

  fg_device *dev = NULL;
  fg_model *m = NULL;
  fg_load_ring *ring = NULL;
  rc = 1;
  if (fg_device_open(a.device, &dev) != FG_OK) {
    fprintf(stderr, "forgia load: %s\n", fg_last_error());
    goto out;
  }
  if (a.bench && fg_device_kind_of(dev) != FG_DEVICE_CPU) {
    /* One ring for both timed loads: pinning is a one-off cost a long-lived caller pays once. */
    if (fg_load_ring_create(dev, a.ring_count ? a.ring_count : FG_LOAD_RING_DEFAULT_COUNT,
                            a.ring_bytes ? a.ring_bytes : FG_LOAD_RING_DEFAULT_BYTES, &ring) != FG_OK) {
      fprintf(stderr, "forgia load: %s\n", fg_last_error());
      goto out;
    }
    o.ring = ring;
  }
  bool bar_on = isatty(STDERR_FILENO);
  if (load_once(&a, dev, &o, &m, bar_on) != FG_OK) {
    fg_cli_report("load", a.path);
    goto out;
  }
  printf("source: %s (%s, %zu file%s)\n", a.path, fg_model_format(m), fg_model_file_count(m),
         fg_model_file_count(m) == 1 ? "" : "s");
  if (a.list)
    for (size_t i = 0; i < fg_model_count(m); i++) {
      const fg_model_tensor *t = fg_model_at(m, i);
      printf("  %-48s %-6s ", t->name, fg_dtype_name(t->dtype));
      print_shape(t);
      printf(" %llu bytes%s\n", (unsigned long long)t->nbytes, t->borrowed ? " (borrowed)" : "");
    }
  report("load", m, dev, &o, a.lazy);
  if (a.bench) {
    /* The first load may have read from disk; the read() pass leaves every file in the page
     * cache, and the load is timed again against it. */
    double read_gbs = 0, memcpy_gbs = 0, h2d_gbs = 0;
    if (bench_read(m, &read_gbs)) {
      fprintf(stderr, "forgia load: --bench: cannot read the files back: %s\n", strerror(errno));
      goto out;
    }
    fg_model_free(m);
    m = NULL;
    if (load_once(&a, dev, &o, &m, false) != FG_OK) {
      fg_cli_report("load", a.path);
      goto out;
    }
    report("warm load", m, dev, &o, a.lazy);
    double gbs = load_gbs(fg_model_stats(m), a.lazy);
    memcpy_gbs = fg_cli_memcpy_gbs();
    if (gbs < 0) {
      /* --lazy borrowed every tensor: there is no load bandwidth to compare */
      printf("bench: warm load read no bytes (--lazy borrowed every tensor): no ratios\n");
      printf("bench: page-cache read() %.3f GB/s\n", read_gbs);
      printf("bench: memcpy %.3f GB/s\n", memcpy_gbs);
    } else {
      printf("bench: warm load %.3f GB/s\n", gbs);
      printf("bench: page-cache read() %.3f GB/s, ratio %.3f\n", read_gbs, read_gbs > 0 ? gbs / read_gbs : 0.0);
      printf("bench: memcpy %.3f GB/s, ratio %.3f\n", memcpy_gbs, memcpy_gbs > 0 ? gbs / memcpy_gbs : 0.0);
      if (fg_device_kind_of(dev) == FG_DEVICE_CUDA) {
        h2d_gbs = fg_cli_h2d_gbs(dev);
        printf("bench: pinned H2D %.3f GB/s, ratio %.3f\n", h2d_gbs, h2d_gbs > 0 ? gbs / h2d_gbs : 0.0);
      }
    }
  }
  rc = 0;
out:
  fg_model_free(m);
  fg_load_ring_free(ring);
  fg_device_close(dev);
  if (a.only) regfree(&re);
  return rc;
}
