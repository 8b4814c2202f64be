/* CLI helper: bytes from files (names, keys, values) and from the command line shown on a
 * terminal without letting them drive it. Bytes below 0x20, 0x7f, the C1 controls
 * (U+0080..U+009F, which some terminals obey) and bytes that are not valid UTF-8 become
 * \xNN; everything else, valid UTF-8 included, passes through. JSON output has its own
 * escaping (util_json.h). */
#ifndef FORGIA_TOOLS_UTIL_TEXT_H
#define FORGIA_TOOLS_UTIL_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Length of the valid UTF-8 sequence at s (n bytes available), 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF are not). */
size_t fg_cli_utf8_seq(const unsigned char *s, size_t n);

/* Writes n bytes of s escaped to f, then spaces up to width columns (one per character
 * shown; width <= 0 pads nothing). */
void fg_cli_put_escaped(FILE *f, const char *s, size_t n, int width);
/* As fg_cli_put_escaped for a NUL-terminated string. */
void fg_cli_puts_escaped(FILE *f, const char *s, int width);
/* Escapes n bytes of s into dst (cap bytes, always NUL-terminated when cap > 0), cutting at
 * a whole escape or character; returns the bytes written without the terminator. */
size_t fg_cli_escape_into(char *dst, size_t cap, const char *s, size_t n);

#endif
