/* Chat templates: recognising a checkpoint's template and rendering conversations the way it
 * does (include/forgia/chat.h). Each renderer transcribes its family's template for text
 * messages, including the Python string methods the template calls (jinja2's trim is
 * str.strip(); split/lstrip/rstrip with '\n'), because that is where renderings that look
 * right differ from the file's by one newline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/chat_internal.h"
#include "forgia/chat.h"

/* ---- growing output buffer ------------------------------------------------------------- */

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
  if (b->oom || !n) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
      b->oom = true;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* A view of bytes: the string operations below narrow it without copying. */
typedef struct view {
  const char *p;
  size_t n;
} view;

static view v_of(const char *s) { return (view){s, s ? strlen(s) : 0}; }
static void putv(sbuf *b, view v) { put(b, v.p, v.n); }

/* Python's str.isspace() for the code point starting at p (UTF-8), its byte length in *w;
 * 0 when not whitespace. Invalid UTF-8 is never whitespace. */
static size_t py_space_at(const unsigned char *p, size_t n) {
  unsigned c = p[0];
  if ((c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20)) return 1;
  if (c == 0xc2 && n >= 2 && (p[1] == 0x85 || p[1] == 0xa0)) return 2;
  if (n >= 3 && c == 0xe1 && p[1] == 0x9a && p[2] == 0x80) return 3; /* U+1680 */
  if (n >= 3 && c == 0xe2 && p[1] == 0x80 && ((p[2] >= 0x80 && p[2] <= 0x8a) || p[2] == 0xa8 || p[2] == 0xa9 || p[2] == 0xaf))
    return 3;                                                          /* U+2000..200A, 2028, 2029, 202F */
  if (n >= 3 && c == 0xe2 && p[1] == 0x81 && p[2] == 0x9f) return 3; /* U+205F */
  if (n >= 3 && c == 0xe3 && p[1] == 0x80 && p[2] == 0x80) return 3; /* U+3000 */
  return 0;
}

/* Start of the UTF-8 sequence that ends at p[n-1] (for stripping from the right). */
static size_t last_char_start(const unsigned char *p, size_t n) {
  size_t i = n - 1;
  for (size_t k = 0; k < 3 && i > 0 && (p[i] & 0xc0) == 0x80; k++) i--;
  return i;
}

/* jinja2's |trim: str.strip() with no argument. */
static view py_strip(view v) {
  const unsigned char *p = (const unsigned char *)v.p;
  size_t a = 0, e = v.n, w;
  while (a < e && (w = py_space_at(p + a, e - a)) != 0) a += w;
  while (e > a) {
    size_t s = last_char_start(p + a, e - a) + a;
    if (s < a || py_space_at(p + s, e - s) != e - s) break;
    e = s;
  }
  return (view){v.p + a, e - a};
}

static view lstrip_nl(view v) {
  while (v.n && v.p[0] == '\n') v.p++, v.n--;
  return v;
}
static view rstrip_nl(view v) {
  while (v.n && v.p[v.n - 1] == '\n') v.n--;
  return v;
}

/* First occurrence of needle in v, or NULL. */
static const char *find(view v, const char *needle) {
  size_t k = strlen(needle);
  if (k > v.n) return NULL;
  for (size_t i = 0; i + k <= v.n; i++)
    if (memcmp(v.p + i, needle, k) == 0) return v.p + i;
  return NULL;
}
static const char *find_last(view v, const char *needle) {
  size_t k = strlen(needle);
  if (k > v.n) return NULL;
  for (size_t i = v.n - k + 1; i-- > 0;)
    if (memcmp(v.p + i, needle, k) == 0) return v.p + i;
  return NULL;
}
/* s.split(sep)[0] and s.split(sep)[-1]. */
static view split_first(view v, const char *sep) {
  const char *at = find(v, sep);
  return at ? (view){v.p, (size_t)(at - v.p)} : v;
}
static view split_last(view v, const char *sep) {
  const char *at = find_last(v, sep);
  if (!at) return v;
  size_t skip = (size_t)(at - v.p) + strlen(sep);
  return (view){v.p + skip, v.n - skip};
}

static bool starts(view v, const char *s) { return v.n >= strlen(s) && memcmp(v.p, s, strlen(s)) == 0; }
static bool ends(view v, const char *s) {
  size_t k = strlen(s);
  return v.n >= k && memcmp(v.p + v.n - k, s, k) == 0;
}

static bool role_is(const fg_chat_msg *m, const char *r) { return strcmp(m->role, r) == 0; }

/* ---- the families ------------------------------------------------------------------------- */

static const char IM_START[] = "<|im_start|>", IM_END_NL[] = "<|im_end|>\n";

static void chatml_turn(sbuf *b, const char *role, view content) {
  puts_(b, IM_START);
  puts_(b, role);
  puts_(b, "\n");
  putv(b, content);
  puts_(b, IM_END_NL);
}

static void render_smollm2(sbuf *b, const fg_chat_msg *m, size_t n, const fg_chat_opts *o) {
  for (size_t i = 0; i < n; i++) {
    if (i == 0 && !role_is(&m[0], "system"))
      chatml_turn(b, "system", v_of("You are a helpful AI assistant named SmolLM, trained by Hugging Face"));
    chatml_turn(b, m[i].role, v_of(m[i].content));
  }
  if (o->add_generation_prompt) puts_(b, "<|im_start|>assistant\n");
}

static void render_lfm2(sbuf *b, const fg_chat_msg *m, size_t n, const fg_chat_opts *o) {
  puts_(b, o->bos_token ? o->bos_token : "");
  if (role_is(&m[0], "system")) {
    /* An empty system prompt is falsy: no system turn. */
    if (m[0].content[0]) chatml_turn(b, "system", v_of(m[0].content));
    m++, n--;
  }
  size_t last_assistant = (size_t)-1;
  for (size_t i = 0; i < n; i++)
    if (role_is(&m[i], "assistant")) last_assistant = i;
  for (size_t i = 0; i < n; i++) {
    view c = v_of(m[i].content);
    /* Thinking of earlier assistant turns is dropped (keep_past_thinking defaults false). */
    if (role_is(&m[i], "assistant") && i != last_assistant && find(c, "</think>")) c = py_strip(split_last(c, "</think>"));
    chatml_turn(b, m[i].role, c);
  }
  if (o->add_generation_prompt) puts_(b, "<|im_start|>assistant\n");
}

static void render_qwen25(sbuf *b, const fg_chat_msg *m, size_t n, const fg_chat_opts *o) {
  if (role_is(&m[0], "system"))
    chatml_turn(b, "system", v_of(m[0].content));
  else
    chatml_turn(b, "system", v_of("You are Qwen, created by Alibaba Cloud. You are a helpful assistant."));
  for (size_t i = 0; i < n; i++)
    if (!(i == 0 && role_is(&m[i], "system"))) chatml_turn(b, m[i].role, v_of(m[i].content));
  if (o->add_generation_prompt) puts_(b, "<|im_start|>assistant\n");
}

/* The last user turn that is not a wrapped tool response; -1 when there is none. */
static long last_query(const fg_chat_msg *m, size_t n, bool trim) {
  for (size_t i = n; i-- > 0;) {
    if (!role_is(&m[i], "user")) continue;
    view c = v_of(m[i].content);
    if (trim) c = py_strip(c);
    if (!(starts(c, "<tool_response>") && ends(c, "</tool_response>"))) return (long)i;
  }
  return -1;
}

static void think_block(sbuf *b, view reasoning, view content) {
  puts_(b, "<|im_start|>assistant\n<think>\n");
  putv(b, reasoning);
  puts_(b, "\n</think>\n\n");
  putv(b, content);
}

static void render_qwen3(sbuf *b, const fg_chat_msg *m, size_t n, const fg_chat_opts *o) {
  if (role_is(&m[0], "system")) chatml_turn(b, "system", v_of(m[0].content));
  long lq = last_query(m, n, false);
  if (lq < 0) lq = (long)n - 1;
  for (size_t i = 0; i < n; i++) {
    if (role_is(&m[i], "user") || (role_is(&m[i], "system") && i > 0)) {
      chatml_turn(b, m[i].role, v_of(m[i].content));
    } else if (role_is(&m[i], "assistant")) {
      view all = v_of(m[i].content), content = all, reasoning = {"", 0};
      if (find(all, "</think>")) {
        content = lstrip_nl(split_last(all, "</think>"));
        reasoning = lstrip_nl(split_last(rstrip_nl(split_first(all, "</think>")), "<think>"));
      }
      if ((long)i > lq && (i == n - 1 || reasoning.n)) {
        think_block(b, rstrip_nl(lstrip_nl(reasoning)), lstrip_nl(content));
      } else {
        puts_(b, "<|im_start|>assistant\n");
        putv(b, content);
      }
      puts_(b, IM_END_NL);
    }
  }
  if (o->add_generation_prompt) {
    puts_(b, "<|im_start|>assistant\n");
    if (o->no_think) puts_(b, "<think>\n\n</think>\n\n");
  }
}

static void render_qwen35(sbuf *b, const fg_chat_msg *m, size_t n, const fg_chat_opts *o) {
  if (role_is(&m[0], "system")) chatml_turn(b, "system", py_strip(v_of(m[0].content)));
  long lq = last_query(m, n, true);
  for (size_t i = 0; i < n; i++) {
    view content = py_strip(v_of(m[i].content));
    if (role_is(&m[i], "user")) {
      chatml_turn(b, "user", content);
    } else if (role_is(&m[i], "assistant")) {
      view reasoning = {"", 0};
      if (find(content, "</think>")) {
        reasoning = lstrip_nl(split_last(rstrip_nl(split_first(content, "</think>")), "<think>"));
        content = lstrip_nl(split_last(content, "</think>"));
      }
      reasoning = py_strip(reasoning);
      if ((long)i > lq) {
        think_block(b, reasoning, content);
      } else {
        puts_(b, "<|im_start|>assistant\n");
        putv(b, content);
      }
      puts_(b, IM_END_NL);
    }
  }
  if (o->add_generation_prompt) puts_(b, o->no_think ? "<|im_start|>assistant\n<think>\n\n</think>\n\n"
                                                     : "<|im_start|>assistant\n<think>\n");
}

static void header_turn(sbuf *b, const char *role, view content) {
  puts_(b, "<|start_header_id|>");
  puts_(b, role);
  puts_(b, "<|end_header_id|>\n\n");
  putv(b, content);
  puts_(b, "<|eot_id|>");
}

static void render_llama3(sbuf *b, const fg_chat_msg *m, size_t n, const fg_chat_opts *o) {
  for (size_t i = 0; i < n; i++) {
    if (i == 0) puts_(b, o->bos_token ? o->bos_token : "");
    header_turn(b, m[i].role, py_strip(v_of(m[i].content)));
  }
  if (o->add_generation_prompt) puts_(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void render_llama31(sbuf *b, const fg_chat_msg *m, size_t n, const fg_chat_opts *o) {
  puts_(b, o->bos_token ? o->bos_token : "");
  view sys = {"", 0};
  if (role_is(&m[0], "system")) {
    sys = py_strip(v_of(m[0].content));
    m++, n--;
  }
  puts_(b, "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: ");
  puts_(b, o->date ? o->date : "26 Jul 2024");
  puts_(b, "\n\n");
  putv(b, sys);
  puts_(b, "<|eot_id|>");
  for (size_t i = 0; i < n; i++) header_turn(b, m[i].role, py_strip(v_of(m[i].content)));
  if (o->add_generation_prompt) puts_(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void render_gemma(sbuf *b, const fg_chat_msg *m, size_t n, const fg_chat_opts *o, bool fold_system) {
  puts_(b, o->bos_token ? o->bos_token : "");
  const char *prefix = NULL;
  if (fold_system && role_is(&m[0], "system")) {
    prefix = m[0].content;
    m++, n--;
  }
  for (size_t i = 0; i < n; i++) {
    puts_(b, "<start_of_turn>");
    puts_(b, role_is(&m[i], "assistant") ? "model" : m[i].role);
    puts_(b, "\n");
    if (i == 0 && prefix) {
      puts_(b, prefix);
      puts_(b, "\n\n");
    }
    putv(b, py_strip(v_of(m[i].content)));
    puts_(b, "<end_of_turn>\n");
  }
  if (o->add_generation_prompt) puts_(b, "<start_of_turn>model\n");
}

/* What each family's template raises on, checked before anything is written. */
static fg_status check_messages(fg_chat_family f, const fg_chat_msg *m, size_t n) {
  if (n == 0) return fg_fail(FG_ERR_INVALID_ARG, "chat: no messages to render");
  for (size_t i = 0; i < n; i++) {
    if (!m[i].role || !m[i].content) return fg_fail(FG_ERR_INVALID_ARG, "chat: message %zu has no role or content", i);
    if (!role_is(&m[i], "system") && !role_is(&m[i], "user") && !role_is(&m[i], "assistant"))
      return fg_fail(FG_ERR_INVALID_ARG,
                     "chat: message %zu has role \"%s\"; the built-in renderers take system, user and assistant", i,
                     m[i].role);
  }
  if (f == FG_CHAT_QWEN35) {
    for (size_t i = 1; i < n; i++)
      if (role_is(&m[i], "system"))
        return fg_fail(FG_ERR_INVALID_ARG, "chat: message %zu: Qwen 3.5's template takes a system message only first", i);
    if (last_query(m, n, true) < 0)
      return fg_fail(FG_ERR_INVALID_ARG, "chat: Qwen 3.5's template needs a user message (none found)");
  }
  if (f == FG_CHAT_GEMMA2 || f == FG_CHAT_GEMMA3) {
    size_t first = 0;
    if (role_is(&m[0], "system")) {
      if (f == FG_CHAT_GEMMA2)
        return fg_fail(FG_ERR_INVALID_ARG, "chat: message 0: Gemma 2's template does not support the system role");
      first = 1;
    }
    for (size_t i = first; i < n; i++)
      if (role_is(&m[i], "user") != ((i - first) % 2 == 0))
        return fg_fail(FG_ERR_INVALID_ARG,
                       "chat: message %zu (%s): Gemma's template needs roles alternating user/assistant, user first", i,
                       m[i].role);
  }
  return FG_OK;
}

fg_status fg_chat_render(fg_chat_family f, const fg_chat_msg *msgs, size_t n, const fg_chat_opts *o, char **out,
                         size_t *len) {
  if ((!msgs && n) || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_render: NULL argument");
  if (!fg_chat_family_name(f)) return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_render: unknown family %d", (int)f);
  fg_status s = check_messages(f, msgs, n);
  if (s) return s;
  fg_chat_opts dflt = {0};
  if (!o) o = &dflt;
  sbuf b = {0};
  put(&b, "", 0);
  switch (f) {
  case FG_CHAT_SMOLLM2: render_smollm2(&b, msgs, n, o); break;
  case FG_CHAT_LFM2: render_lfm2(&b, msgs, n, o); break;
  case FG_CHAT_QWEN25: render_qwen25(&b, msgs, n, o); break;
  case FG_CHAT_QWEN3: render_qwen3(&b, msgs, n, o); break;
  case FG_CHAT_QWEN35: render_qwen35(&b, msgs, n, o); break;
  case FG_CHAT_LLAMA3: render_llama3(&b, msgs, n, o); break;
  case FG_CHAT_LLAMA31: render_llama31(&b, msgs, n, o); break;
  case FG_CHAT_GEMMA2: render_gemma(&b, msgs, n, o, false); break;
  case FG_CHAT_GEMMA3: render_gemma(&b, msgs, n, o, true); break;
  }
  if (!b.oom && !b.p) { /* nothing written: an empty, still NUL-terminated string */
    b.p = calloc(1, 1);
    b.oom = !b.p;
  }
  if (b.oom) {
    free(b.p);
    return fg_fail(FG_ERR_NOMEM, "chat: out of memory rendering %zu messages", n);
  }
  *out = b.p;
  if (len) *len = b.len;
  return FG_OK;
}

void fg_chat_free(char *text) { free(text); }

/* ---- recognition ------------------------------------------------------------------------- */

static const char *const family_names[] = {NULL,      "smollm2", "lfm2",     "qwen2.5", "qwen3",
                                           "qwen3.5", "llama3",  "llama3.1", "gemma2",  "gemma3"};

const char *fg_chat_family_name(fg_chat_family f) {
  return (int)f >= 1 && (size_t)f < sizeof family_names / sizeof family_names[0] ? family_names[f] : NULL;
}

/* Each family: the lines that decide its output for text conversations (all must be in the
 * template), and lines whose presence means another family (none may be). Templates spell a
 * newline inside a Jinja string either as the two characters \n or as a newline itself
 * (the GGUF and JSON copies of one template differ so); matching is done on the text with
 * every \n turned into a newline, so the keys below use newlines. */
typedef struct family_keys {
  fg_chat_family family;
  const char *need[6];
  const char *reject[3];
} family_keys;

static const family_keys keys[] = {
    {FG_CHAT_GEMMA3,
     {"<start_of_turn>", "set first_user_prefix = messages[0]['content'] + '\n\n'",
      "(first_user_prefix if loop.first else", "message['content'] | trim", "'<end_of_turn>\n'",
      "'<start_of_turn>model\n'"},
     {NULL}},
    {FG_CHAT_GEMMA2,
     {"<start_of_turn>", "System role not supported", "message['content'] | trim + '<end_of_turn>\n'",
      "'<start_of_turn>model\n'"},
     {"first_user_prefix"}},
    {FG_CHAT_LLAMA31,
     {"<|start_header_id|>", "Cutting Knowledge Date: December 2023\n", "\"Today Date: \" + date_string + \"\n\n\"",
      "message['content'] | trim + '<|eot_id|>'", "messages[0]['content']|trim"},
     {NULL}},
    {FG_CHAT_LLAMA3,
     {"'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>'",
      "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}",
      "'<|start_header_id|>assistant<|end_header_id|>\n\n'"},
     {"Cutting Knowledge", "system_message"}},
    {FG_CHAT_SMOLLM2,
     {"'<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n'",
      "loop.first and messages[0]['role'] != 'system'",
      "'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'"},
     {NULL}},
    {FG_CHAT_QWEN25,
     {"'<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n'",
      "(message.role == \"user\") or (message.role == \"system\" and not loop.first) or (message.role == \"assistant\" and "
      "not message.tool_calls)",
      "'<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n'"},
     {"<think>"}},
    {FG_CHAT_QWEN35,
     {"render_content", "'<|im_start|>' + message.role + '\n<think>\n' + reasoning_content + '\n</think>\n\n' + content",
      "set reasoning_content = reasoning_content|trim", "'<think>\n\n</think>\n\n'", "{{- '<think>\n' }}",
      "ns.last_query_index = index"},
     {NULL}},
    {FG_CHAT_QWEN3,
     {"'<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + "
      "content.lstrip('\n')",
      "if loop.last or (not loop.last and reasoning_content)", "enable_thinking is defined and enable_thinking is false",
      "'<think>\n\n</think>\n\n'", "ns.last_query_index = index",
      "'<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n'"},
     {"render_content", "You are Qwen"}},
    {FG_CHAT_LFM2,
     {"bos_token", "keep_past_thinking", "\"<|im_start|>system\n\" + ns.system_prompt + \"<|im_end|>\n\"",
      "content.split(\"</think>\")[-1] | trim", "\"<|im_start|>\" + message[\"role\"] + \"\n\"",
      "content + \"<|im_end|>\n\""},
     {NULL}},
};

static bool contains(const char *t, size_t n, const char *s) { return find((view){t, n}, s) != NULL; }

static fg_status recognize(const char *tmpl, size_t len, size_t len_in, fg_chat_family *out);

fg_status fg_chat_recognize(const char *tmpl_in, size_t len_in, fg_chat_family *out) {
  if (!tmpl_in || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_recognize: NULL argument");
  char *tmpl = malloc(len_in + 1);
  if (!tmpl) return fg_fail(FG_ERR_NOMEM, "chat: out of memory reading a %zu-byte template", len_in);
  size_t len = 0;
  for (size_t i = 0; i < len_in; i++) {
    if (tmpl_in[i] == '\\' && i + 1 < len_in && tmpl_in[i + 1] == 'n') {
      tmpl[len++] = '\n';
      i++;
    } else {
      tmpl[len++] = tmpl_in[i];
    }
  }
  tmpl[len] = 0;
  fg_status s = recognize(tmpl, len, len_in, out);
  free(tmpl);
  return s;
}

static fg_status recognize(const char *tmpl, size_t len, size_t len_in, fg_chat_family *out) {
  const family_keys *near = NULL;
  size_t near_have = 0;
  const char *near_missing = NULL;
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    const family_keys *f = &keys[k];
    size_t have = 0, want = 0;
    const char *missing = NULL;
    for (size_t i = 0; i < 6 && f->need[i]; i++, want++) {
      if (contains(tmpl, len, f->need[i]))
        have++;
      else if (!missing)
        missing = f->need[i];
    }
    bool rejected = false;
    for (size_t i = 0; i < 3 && f->reject[i]; i++) rejected |= contains(tmpl, len, f->reject[i]);
    if (have == want && !rejected) {
      *out = f->family;
      return FG_OK;
    }
    if (have > near_have && !rejected) near = f, near_have = have, near_missing = missing;
  }
  if (near)
    return fg_fail(FG_ERR_UNSUPPORTED,
                   "chat template (%zu bytes) is not one the built-in renderers reproduce: closest is %s's, but it "
                   "lacks %.120s",
                   len_in, fg_chat_family_name(near->family), near_missing);
  return fg_fail(FG_ERR_UNSUPPORTED,
                 "chat template (%zu bytes, starting \"%.60s\") is none of smollm2, lfm2, qwen2.5, qwen3, qwen3.5, "
                 "llama3, llama3.1, gemma2, gemma3",
                 len_in, tmpl);
}

fg_status fg_chat_render_template(const char *tmpl, size_t tmpl_len, const fg_chat_msg *msgs, size_t n,
                                  const fg_chat_opts *o, char **out, size_t *len) {
  fg_chat_family f;
  fg_status s = fg_chat_recognize(tmpl, tmpl_len, &f);
  /* no built-in renderer reproduces it: the interpreter renders the template itself */
  if (s == FG_ERR_UNSUPPORTED) return fg_chat_render_jinja_msgs(tmpl, tmpl_len, msgs, n, o, out, len);
  if (s) return s;
  fg_chat_opts oo = o ? *o : (fg_chat_opts){0};
  char today[32];
  /* Llama 3.2's template formats strftime_now("%d %b %Y"), which Hugging Face's renderer
   * gives the current date; 3.1 and 3.3 fix "26 Jul 2024" instead. */
  if (f == FG_CHAT_LLAMA31 && !oo.date && contains(tmpl, tmpl_len, "strftime_now(\"%d %b %Y\")")) {
    time_t now = time(NULL);
    struct tm tm;
    static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (gmtime_r(&now, &tm)) {
      snprintf(today, sizeof today, "%02d %s %04d", tm.tm_mday, mon[tm.tm_mon], tm.tm_year + 1900);
      oo.date = today;
    }
  }
  return fg_chat_render(f, msgs, n, &oo, out, len);
}
