/* GGUF from an input that cannot seek (a pipe, a socket, stdin).
 *
 *   fg_gguf_stream *s;
 *   if (fg_gguf_stream_open_fd(fd, "stdin", NULL, &s)) { fprintf(stderr, "%s\n", fg_last_error()); ... }
 *   const fg_gguf_file *meta = fg_gguf_stream_metadata(s);      // the KV getters of gguf.h
 *   for (size_t i = 0; i < fg_gguf_stream_tensor_count(s); i++) ... fg_gguf_stream_tensor_at(s, i)
 *   fg_gguf_stream_read(s, want, on_chunk, user);                // tensors, in file order
 *   fg_gguf_stream_close(s);
 *
 * Opening reads the header (KVs and tensor directory) with buffered read(2) calls and
 * validates it as fg_gguf_open does (the same statuses; the KVs are parsed by the same
 * parser). Nothing is ever seeked: fg_gguf_stream_read walks the data section front to back,
 * hands each wanted tensor to the callback in pieces of at most chunk_bytes, and reads
 * through the padding and every unwanted tensor in pieces of the same size, dropping them.
 * Memory is the header, one chunk and a 64 KiB input buffer, whatever the tensor sizes.
 *
 * Errors name the stream, the structure and the byte offset in the stream: an input that ends
 * early is FG_ERR_TRUNCATED ("ends at offset N inside tensor 'x'"), a failed read FG_ERR_IO
 * with errno's text. A header larger than max_header_bytes is FG_ERR_RANGE, before more
 * than that is held.
 *
 * Thread safety: a stream is used by one thread at a time; the callbacks run on the thread
 * that called fg_gguf_stream_read. */
#ifndef FORGIA_GGUF_STREAM_H
#define FORGIA_GGUF_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/gguf.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_GGUF_STREAM_DEFAULT_CHUNK ((size_t)4 << 20)
#define FG_GGUF_STREAM_DEFAULT_MAX_HEADER ((uint64_t)1 << 30)

typedef struct fg_gguf_stream_options {
  size_t chunk_bytes;         /* largest piece delivered or read through at once; 0: 4 MiB */
  uint64_t max_header_bytes;  /* most header bytes held in memory; 0: 1 GiB */
} fg_gguf_stream_options;

typedef struct fg_gguf_stream fg_gguf_stream;

/* Reads the header from fd (left open; the stream owns no descriptor). name is copied and
 * names the input in messages ("<stream>" when NULL). On failure *out is untouched. */
FG_API fg_status fg_gguf_stream_open_fd(int fd, const char *name, const fg_gguf_stream_options *o,
                                        fg_gguf_stream **out);
FG_API void fg_gguf_stream_close(fg_gguf_stream *s); /* NULL-safe */

/* The metadata as a parsed file: every KV getter of gguf.h applies (strings and arrays borrow
 * from the stream, valid until close). It holds no tensors (fg_gguf_tensor_count is 0): the
 * directory is below. */
FG_API const fg_gguf_file *fg_gguf_stream_metadata(const fg_gguf_stream *s);
FG_API uint32_t fg_gguf_stream_version(const fg_gguf_stream *s);
FG_API uint32_t fg_gguf_stream_alignment(const fg_gguf_stream *s);
/* The directory in file order. Entries are as fg_gguf_open gives them, except data, which is
 * NULL (the bytes come through fg_gguf_stream_read). NULL when i is out of range. */
FG_API size_t fg_gguf_stream_tensor_count(const fg_gguf_stream *s);
FG_API const fg_gguf_tensor *fg_gguf_stream_tensor_at(const fg_gguf_stream *s, size_t i);
/* Stream offset of the data section, and of the next byte the stream will read. */
FG_API uint64_t fg_gguf_stream_data_offset(const fg_gguf_stream *s);
FG_API uint64_t fg_gguf_stream_position(const fg_gguf_stream *s);

/* Return true to receive t. Called once per tensor, in file order, before any data is read. */
typedef bool (*fg_gguf_stream_want_fn)(const fg_gguf_tensor *t, void *user);
/* A piece of a wanted tensor: len bytes (at most chunk_bytes) at offset off of its data,
 * borrowed until the callback returns. Pieces of a tensor come in order and cover it; a
 * tensor of 0 bytes comes as one call with len 0. Anything but FG_OK stops the read, which
 * returns that status with the callback's message, prefixed by the stream and tensor. */
typedef fg_status (*fg_gguf_stream_chunk_fn)(const fg_gguf_tensor *t, uint64_t off, const void *bytes, size_t len,
                                             void *user);

/* Delivers the wanted tensors (want NULL: every tensor) and stops after the last of them:
 * what follows it is not read. Once per stream: a second call is FG_ERR_STATE, as is any
 * call after a failed one. */
FG_API fg_status fg_gguf_stream_read(fg_gguf_stream *s, fg_gguf_stream_want_fn want, fg_gguf_stream_chunk_fn chunk,
                                     void *user);

#ifdef __cplusplus
}
#endif
#endif
