/* CLI helper: chat prompts shared by tokenize, generate and chat (tools/util_chat.c). */
#ifndef FORGIA_TOOLS_UTIL_CHAT_H
#define FORGIA_TOOLS_UTIL_CHAT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "forgia/chat.h"
#include "forgia/tokenizer.h"

/* The built-in renderers' names, for messages. */
extern const char fg_cli_chat_builtin_names[];

/* The renderer and, where the file's template picks it, that template's text (tmpl). */
typedef struct fg_cli_chat {
  bool builtin; /* family chosen by name or architecture: no template text */
  fg_chat_family family;
  char *tmpl;
  size_t tlen;
  char *arch; /* chosen by this architecture: said in a note once the prompt is rendered */
} fg_cli_chat;

/* --template NAME is first a built-in renderer's name, then the file's template of that name;
 * without it, the file's own template, else its architecture's renderer. 0, or 1 after
 * reporting as cmd. */
int fg_cli_chat_pick(const char *cmd, const char *path, const char *name, fg_cli_chat *p);
void fg_cli_chat_free(fg_cli_chat *p);
/* MESSAGES.json ("-": standard input): [{"role": ..., "content": ...}, ...]; msgs borrow
 * from *root. With raw non-NULL, *raw gets the file's text (free it) and a message needs only
 * a string role: its other keys and a content that is not a string (msgs[i].content NULL)
 * reach the template through fg_cli_chat_render_json. 0, or 1 after reporting. */
int fg_cli_chat_messages(const char *cmd, const char *file, cJSON **root, fg_chat_msg **msgs, size_t *n, char **raw,
                         size_t *raw_len);
/* Renders with the tokenizer's BOS text as bos_token (t may be NULL). */
fg_status fg_cli_chat_render(const fg_cli_chat *p, const fg_tokenizer *t, const fg_chat_msg *msgs, size_t n,
                             const fg_chat_opts *o, char **out, size_t *len);
/* As fg_cli_chat_render, but a picked template gets the messages' JSON text raw (tool calls,
 * content parts) through fg_chat_render_template_json. */
fg_status fg_cli_chat_render_json(const fg_cli_chat *p, const fg_tokenizer *t, const char *raw, size_t raw_len,
                                  const fg_chat_msg *msgs, size_t n, const fg_chat_opts *o, char **out, size_t *len);
/* The note a run that rendered with an architecture's renderer prints on stderr. */
void fg_cli_chat_note(const char *cmd, const char *path, const fg_cli_chat *p);
/* The BOS token's text (free with fg_tokenizer_free_text), NULL when none. */
char *fg_cli_chat_bos(const fg_tokenizer *t);
/* "-" is named "standard input" in messages. */
const char *fg_cli_chat_shown(const char *file);

#endif
