/* libFuzzer target for the GGUF reader of non-seekable inputs (forgia/gguf_stream.h).
 *
 * The input goes through a pipe (a writer thread feeds it in pieces whose sizes come from
 * the input's first byte), the header is parsed with buffered reads, and every tensor is
 * delivered with a small chunk size; each delivered piece must lie inside its tensor and
 * pieces must arrive in order. Whatever the stream accepts must also be what the mmap
 * reader (fg_gguf_open_bytes) accepts with the same directory. Seeds: the GGUF corpus. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forgia/gguf.h"
#include "forgia/gguf_stream.h"

typedef struct feed {
  int fd;
  const uint8_t *p;
  size_t n, piece;
} feed;

static void *writer(void *arg) {
  feed *f = arg;
  for (size_t off = 0; off < f->n;) {
    size_t k = f->n - off < f->piece ? f->n - off : f->piece;
    ssize_t w = write(f->fd, f->p + off, k);
    if (w <= 0) break; /* the reader stopped early and closed its end */
    off += (size_t)w;
  }
  close(f->fd);
  return NULL;
}

typedef struct seen {
  const fg_gguf_tensor *t;
  uint64_t next;
  uint64_t acc;
} seen;

static fg_status on_chunk(const fg_gguf_tensor *t, uint64_t off, const void *bytes, size_t len, void *user) {
  seen *s = user;
  if (s->t != t) {
    s->t = t;
    s->next = 0;
  }
  if (off != s->next || off + len > t->nbytes) __builtin_trap();
  s->next = off + len;
  if (len) s->acc += ((const uint8_t *)bytes)[len - 1];
  return FG_OK;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  signal(SIGPIPE, SIG_IGN); /* the writer may outlive a reader that stopped early */
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = 1 + (size_t)data[0] * 37;
  data++, size--;
  int fds[2];
  if (pipe(fds)) return 0;
  feed f = {fds[1], data, size, piece};
  pthread_t th;
  if (pthread_create(&th, NULL, writer, &f)) {
    close(fds[0]), close(fds[1]);
    return 0;
  }
  const fg_gguf_stream_options o = {.chunk_bytes = 4096, .max_header_bytes = 1 << 24};
  fg_gguf_stream *s = NULL;
  if (fg_gguf_stream_open_fd(fds[0], "fuzz", &o, &s) == FG_OK) {
    seen sn = {0};
    (void)fg_gguf_stream_read(s, NULL, on_chunk, &sn);
    /* what the stream parsed, the mmap reader parses with the same directory */
    fg_gguf_file *g = NULL;
    if (fg_gguf_open_bytes(data, size, &g) == FG_OK) {
      if (fg_gguf_tensor_count(g) != fg_gguf_stream_tensor_count(s)) __builtin_trap();
      fg_gguf_close(g);
    }
    fg_gguf_stream_close(s);
  }
  close(fds[0]); /* unblocks the writer if the stream stopped early */
  pthread_join(th, NULL);
  return 0;
}
