/* Chat templates through the Jinja interpreter (include/forgia/jinja.h): the variables
 * Hugging Face's apply_chat_template passes (messages, bos_token, eos_token,
 * add_generation_prompt, the caller's keyword arguments), and the choice between a built-in
 * renderer (the fast path, byte-equal where it recognises the template) and the
 * interpreter. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/chat_internal.h"
#include "forgia/jinja.h"

typedef struct tbuf {
  char *p;
  size_t n, cap;
  bool oom;
} tbuf;

static void put(tbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + n + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
      b->oom = true;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void puts_(tbuf *b, const char *s) { put(b, s, strlen(s)); }

static void put_json_str(tbuf *b, const char *s) {
  put(b, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char tmp[8];
    if (c == '"' || c == '\\') {
      put(b, "\\", 1);
      put(b, s, 1);
    } else if (c < 0x20) {
      snprintf(tmp, sizeof tmp, "\\u%04x", c);
      put(b, tmp, 6);
    } else {
      put(b, s, 1);
    }
  }
  put(b, "\"", 1);
}

/* The object's members without its braces, so they can follow the defaults (later keys win). */
static bool members(const char *s, size_t n, const char **in, size_t *inlen) {
  size_t a = 0, e = n;
  while (a < e && strchr(" \t\r\n", s[a])) a++;
  while (e > a && strchr(" \t\r\n", s[e - 1])) e--;
  if (e - a < 2 || s[a] != '{' || s[e - 1] != '}') return false;
  a++;
  e--;
  while (a < e && strchr(" \t\r\n", s[a])) a++;
  *in = s + a;
  *inlen = e - a;
  return true;
}

fg_status fg_chat_render_jinja(const char *tmpl, size_t tlen, const char *messages_json, size_t mlen,
                               const char *extra_json, size_t elen, const fg_chat_opts *o, char **out, size_t *len) {
  if (!tmpl || !messages_json || !out || !len) return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_render_jinja: NULL argument");
  *out = NULL;
  *len = 0;
  fg_chat_opts oo = o ? *o : (fg_chat_opts){0};
  const char *extra = NULL;
  size_t xn = 0;
  if (extra_json && elen && !members(extra_json, elen, &extra, &xn))
    return fg_fail(FG_ERR_INVALID_JSON, "chat template: the extra variables must be a JSON object");
  tbuf b = {0};
  puts_(&b, "{\"bos_token\":");
  put_json_str(&b, oo.bos_token ? oo.bos_token : "");
  puts_(&b, ",\"eos_token\":\"\",\"add_generation_prompt\":");
  puts_(&b, oo.add_generation_prompt ? "true" : "false");
  if (oo.no_think) puts_(&b, ",\"enable_thinking\":false");
  if (oo.date) {
    puts_(&b, ",\"date_string\":");
    put_json_str(&b, oo.date);
  }
  puts_(&b, ",\"messages\":");
  put(&b, messages_json, mlen);
  if (xn) {
    puts_(&b, ",");
    put(&b, extra, xn);
  }
  puts_(&b, "}");
  if (b.oom) {
    free(b.p);
    return fg_fail(FG_ERR_NOMEM, "chat template: out of memory");
  }
  fg_jinja *j = NULL;
  fg_status s = fg_jinja_compile(tmpl, tlen, &j);
  if (!s) {
    s = fg_jinja_render(j, b.p, b.n, NULL, out, len);
    fg_jinja_free(j);
  }
  free(b.p);
  return s;
}

fg_status fg_chat_render_jinja_msgs(const char *tmpl, size_t tlen, const fg_chat_msg *msgs, size_t n,
                                    const fg_chat_opts *o, char **out, size_t *len) {
  tbuf b = {0};
  put(&b, "[", 1);
  for (size_t i = 0; i < n; i++) {
    if (!msgs[i].role || !msgs[i].content) return free(b.p), fg_fail(FG_ERR_INVALID_ARG, "message %zu: NULL role or content", i);
    puts_(&b, i ? ",{\"role\":" : "{\"role\":");
    put_json_str(&b, msgs[i].role);
    puts_(&b, ",\"content\":");
    put_json_str(&b, msgs[i].content);
    puts_(&b, "}");
  }
  put(&b, "]", 1);
  if (b.oom) {
    free(b.p);
    return fg_fail(FG_ERR_NOMEM, "chat template: out of memory");
  }
  fg_status s = fg_chat_render_jinja(tmpl, tlen, b.p, b.n, NULL, 0, o, out, len);
  free(b.p);
  return s;
}

/* Messages the built-in renderers take: objects of exactly a role among system, user and
 * assistant and a string content. */
static bool plain(const cJSON *arr) {
  if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) return false;
  const cJSON *m;
  cJSON_ArrayForEach(m, arr) {
    if (!cJSON_IsObject(m) || cJSON_GetArraySize(m) != 2) return false;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role"), *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!cJSON_IsString(r) || !cJSON_IsString(c)) return false;
    if (strcmp(r->valuestring, "system") && strcmp(r->valuestring, "user") && strcmp(r->valuestring, "assistant"))
      return false;
  }
  return true;
}

fg_status fg_chat_render_template_json(const char *tmpl, size_t tlen, const char *messages_json, size_t mlen,
                                       const char *extra_json, size_t elen, const fg_chat_opts *o, char **out, size_t *len) {
  if (!tmpl || !messages_json || !out || !len)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_render_template_json: NULL argument");
  fg_chat_family f;
  if (!elen && fg_chat_recognize(tmpl, tlen, &f) == FG_OK) {
    cJSON *arr = cJSON_ParseWithLength(messages_json, mlen);
    if (plain(arr)) {
      size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
      fg_chat_msg *msgs = calloc(n, sizeof *msgs);
      if (!msgs) {
        cJSON_Delete(arr);
        return fg_fail(FG_ERR_NOMEM, "chat template: out of memory");
      }
      const cJSON *m;
      cJSON_ArrayForEach(m, arr) {
        msgs[i].role = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring;
        msgs[i++].content = cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring;
      }
      fg_status s = fg_chat_render_template(tmpl, tlen, msgs, n, o, out, len);
      free(msgs);
      cJSON_Delete(arr);
      return s;
    }
    cJSON_Delete(arr);
  }
  return fg_chat_render_jinja(tmpl, tlen, messages_json, mlen, extra_json, elen, o, out, len);
}
