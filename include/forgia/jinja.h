/* Jinja2 templates: the interpreter that renders a checkpoint's own chat template.
 *
 * The subset is the one chat templates use, with the semantics jinja2 has under Hugging
 * Face's apply_chat_template (an ImmutableSandboxedEnvironment with trim_blocks,
 * lstrip_blocks and loop controls): statements if/elif/else, for (else, an `if` filter,
 * tuple unpacking, break/continue, the loop variable), set (also block set and namespace
 * attributes), macro, call, filter, raw and generation; expressions with Python's values and
 * operators; jinja2's tests and filters and the str/dict methods templates call; globals
 * raise_exception, strftime_now, namespace, range and dict; transformers' tojson.
 *
 * Sandboxed: a template reaches only the context it is given, mutating methods (list.append,
 * dict.update, ...) are refused as jinja2's immutable sandbox refuses them, and every render
 * is bounded in output bytes, evaluation steps, call depth and memory, so no template or
 * context can hang or allocate without bound. Every failure is an fg_status with a message
 * naming the template's line:column; a raise_exception() in the template fails with
 * FG_ERR_INVALID_ARG and its own message.
 *
 * Thread safety: a compiled template is read-only while rendering; several threads may
 * render one template at once. */
#ifndef FORGIA_JINJA_H
#define FORGIA_JINJA_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_jinja fg_jinja;

/* Parses TEXT (len bytes, UTF-8). Syntax errors: FG_ERR_INVALID_ARG with "line L:C: ...
 * expected ..."; an unknown filter or test fails only when reached, as in jinja2 3. */
FG_API fg_status fg_jinja_compile(const char *text, size_t len, fg_jinja **out);
FG_API void fg_jinja_free(fg_jinja *t);

typedef struct fg_jinja_opts {
  size_t max_output;  /* bytes of output; 0: 16 MiB */
  uint64_t max_steps; /* evaluation steps (nodes and loop iterations); 0: 50 million */
  uint32_t max_depth; /* nested macro calls and expression nesting; 0: 200 */
  size_t max_memory;  /* bytes the values of one render may hold; 0: 512 MiB */
  int64_t now;        /* strftime_now's time, seconds since the epoch (local time); 0: now */
} fg_jinja_opts;

/* Renders with the variables of CONTEXT_JSON, a JSON object (messages, tools, bos_token,
 * add_generation_prompt, ...: whatever the template reads). o may be NULL (the defaults).
 * *out is malloc'd and NUL-terminated (free with fg_jinja_free_text), *out_len excludes the
 * NUL. Errors: FG_ERR_INVALID_ARG (the template raised, or an operation on values failed,
 * as jinja2 would raise), FG_ERR_RANGE (a bound of o exceeded), FG_ERR_INVALID_JSON. */
FG_API fg_status fg_jinja_render(const fg_jinja *t, const char *context_json, size_t len, const fg_jinja_opts *o,
                                 char **out, size_t *out_len);
FG_API void fg_jinja_free_text(char *text);

#ifdef __cplusplus
}
#endif
#endif
