/* Chat templates: the prompt an instruct model was trained on, rendered the way the
 * checkpoint's own template renders it.
 *
 * forgia reads the template text out of the checkpoint (fg_chat_template_*) and renders it
 * with its Jinja interpreter (forgia/jinja.h), set up as Hugging Face's apply_chat_template
 * sets up jinja2. Nine families' templates also have a built-in renderer (fg_chat_render),
 * checked byte for byte against jinja2 rendering the file's own template
 * (tests/interop/test_chat_interop.cpp); where fg_chat_recognize recognises a template and
 * the messages are text, that renderer is the fast path, otherwise the interpreter runs the
 * template itself.
 *
 * Recognition keys on the lines of a template that decide its output for text
 * conversations, not on a hash of the whole text, so a re-saved or re-indented copy of a
 * family's template is still recognised; a template that changes one of those lines is not
 * (and is interpreted instead).
 *
 * The built-in renderers take text messages only (roles system, user, assistant); tool
 * calls, tool results and content parts go through fg_chat_render_template_json, which
 * hands them to the template as JSON. */
#ifndef FORGIA_CHAT_H
#define FORGIA_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "forgia/api.h"
#include "forgia/gguf.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_chat_family {
  FG_CHAT_SMOLLM2 = 1, /* ChatML; a default "SmolLM" system turn when the first message is not one */
  FG_CHAT_LFM2 = 2,    /* LFM2.5: BOS, ChatML, a system turn only when given; older thinking dropped */
  FG_CHAT_QWEN25 = 3,  /* ChatML; the default "You are Qwen" system turn */
  FG_CHAT_QWEN3 = 4,   /* ChatML with <think> blocks after the last user turn; no_think: empty block */
  FG_CHAT_QWEN35 = 5,  /* Qwen 3.5: contents trimmed, the generation prompt opens <think> */
  FG_CHAT_LLAMA3 = 6,  /* Llama 3.0: header ids, contents trimmed, BOS before the first turn */
  FG_CHAT_LLAMA31 = 7, /* Llama 3.1/3.2/3.3: a system turn with the knowledge and today's dates */
  FG_CHAT_GEMMA2 = 8,  /* Gemma 2: user/model turns alternating, no system role */
  FG_CHAT_GEMMA3 = 9,  /* Gemma 3: the system text prefixed to the first user turn */
} fg_chat_family;

/* "smollm2", "lfm2", "qwen2.5", "qwen3", "qwen3.5", "llama3", "llama3.1", "gemma2", "gemma3";
 * NULL for a value outside the enum. */
FG_API const char *fg_chat_family_name(fg_chat_family f);

/* The family whose template text this is. FG_ERR_UNSUPPORTED with a message naming what is
 * missing when no built-in renderer reproduces it (the interpreter renders such a template). Also tells whether the template reads
 * the date (Llama 3.2's strftime_now) for fg_chat_opts.date. */
FG_API fg_status fg_chat_recognize(const char *tmpl, size_t len, fg_chat_family *out);

typedef struct fg_chat_msg {
  const char *role;    /* "system", "user" or "assistant" */
  const char *content; /* UTF-8, NUL-terminated */
} fg_chat_msg;

typedef struct fg_chat_opts {
  bool add_generation_prompt; /* open the assistant's turn at the end */
  bool no_think;              /* Qwen 3 / 3.5: enable_thinking=false (an empty <think> block) */
  const char *bos_token;      /* the text of the vocabulary's BOS token; NULL: "" */
  /* Llama 3.1+: the "Today Date" line ("26 Jul 2024" form). NULL: the template's own default,
   * which is "26 Jul 2024" for Llama 3.1/3.3 and today's date (UTC) for Llama 3.2, whose
   * template asks for strftime_now as Hugging Face's renderer provides it. */
  const char *date;
} fg_chat_opts;

/* Renders n messages. *out is malloc'd, NUL-terminated (free with fg_chat_free); *len
 * excludes the NUL. FG_ERR_INVALID_ARG naming the message for what the family's template
 * raises on (Gemma's alternation, a system turn that is not first, Qwen 3.5 without a user
 * turn) and for a role other than system/user/assistant; n == 0 is refused. */
FG_API fg_status fg_chat_render(fg_chat_family f, const fg_chat_msg *msgs, size_t n, const fg_chat_opts *o, char **out,
                                size_t *len);
/* fg_chat_recognize then fg_chat_render, with the date default the template asks for; a
 * template that is not recognised is rendered by the Jinja interpreter (fg_chat_render_jinja). */
FG_API fg_status fg_chat_render_template(const char *tmpl, size_t tmpl_len, const fg_chat_msg *msgs, size_t n,
                                         const fg_chat_opts *o, char **out, size_t *len);
FG_API void fg_chat_free(char *text);

/* Renders the template with the Jinja interpreter: messages_json a JSON array of message
 * objects as Hugging Face takes them (role, content as a string or a list of parts,
 * tool_calls, tool_call_id, ...), extra_json NULL or a JSON object of further variables
 * (tools, documents, any keyword argument) that override the defaults: bos_token
 * (o->bos_token), eos_token "", add_generation_prompt, enable_thinking false with
 * o->no_think, date_string with o->date. Errors: the template's syntax (line:column), what it
 * raises (raise_exception's message), the interpreter's bounds (forgia/jinja.h). */
FG_API fg_status fg_chat_render_jinja(const char *tmpl, size_t tlen, const char *messages_json, size_t mlen,
                                      const char *extra_json, size_t elen, const fg_chat_opts *o, char **out,
                                      size_t *len);
/* The built-in renderer where fg_chat_recognize recognises the template, the messages are
 * text and there are no extra variables (fg_chat_render_template); the interpreter
 * otherwise (fg_chat_render_jinja). */
FG_API fg_status fg_chat_render_template_json(const char *tmpl, size_t tlen, const char *messages_json, size_t mlen,
                                              const char *extra_json, size_t elen, const fg_chat_opts *o, char **out,
                                              size_t *len);

/* ---- a renderer chosen without a template text ------------------------------------------ */

/* The family a built-in renderer name names (as fg_chat_family_name spells it). FG_ERR_NOT_FOUND
 * with a message listing the names when it is none of them. */
FG_API fg_status fg_chat_family_from_name(const char *name, fg_chat_family *out);
/* The renderer of a model architecture, for a checkpoint that carries no template: a GGUF
 * general.architecture (gemma2, gemma3, qwen3, qwen35, qwen35moe) or a Hugging Face model_type
 * (gemma3_text besides those spelled alike). Only architectures whose instruct checkpoints all
 * share one family's template are mapped: llama (Llama 2, 3, 3.1, SmolLM2), qwen2 (Qwen 2, 2.5),
 * lfm2 (LFM2, LFM2.5) and qwen3moe (Qwen3, Qwen3-Coder) are not. FG_ERR_NOT_FOUND otherwise. */
FG_API fg_status fg_chat_family_for_arch(const char *arch, fg_chat_family *out);
/* PATH's architecture: a GGUF's general.architecture (metadata only), or a Hugging Face
 * directory's config.json model_type. *out malloc'd (fg_chat_free); FG_ERR_NOT_FOUND naming
 * the file when it names none. */
FG_API fg_status fg_chat_arch_from_path(const char *path, char **out);

/* ---- where the template text comes from ---------------------------------------------- */

/* A GGUF's tokenizer.chat_template, or with name the named template
 * tokenizer.chat_template.<name>; borrowed from the file. FG_ERR_NOT_FOUND naming the file
 * and key when absent. */
FG_API fg_status fg_chat_template_from_gguf(const fg_gguf_file *f, const char *name, fg_gguf_str *out);
/* A Hugging Face directory's template: tokenizer_config.json's chat_template (a string, or a
 * list of {"name", "template"} where name picks one and NULL picks "default"), else the
 * chat_template.jinja file newer transformers versions write beside it. *out is malloc'd
 * (fg_chat_free). */
FG_API fg_status fg_chat_template_from_hf_dir(const char *dir, const char *name, char **out, size_t *len);
/* PATH a GGUF file (metadata only) or a Hugging Face directory; *out malloc'd. */
FG_API fg_status fg_chat_template_from_path(const char *path, const char *name, char **out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
