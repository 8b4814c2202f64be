/* forgia finetune's data (tools/ft_data.h). */
#include "ft_data.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/lora.h"
#include "forgia/rng.h"
#include "util_file.h"
#include "util_report.h"

static const char *const format_names[] = {"text", "jsonl", "chat"};

bool ft_format_parse(const char *name, ft_format *out) {
  for (int i = 0; i < 3; i++)
    if (!strcmp(name, format_names[i])) {
      *out = (ft_format)i;
      return true;
    }
  return false;
}

const char *ft_format_name(ft_format f) { return format_names[f]; }

void ft_data_free(ft_data *d) {
  for (size_t i = 0; d->ex && i < d->n; i++) {
    free(d->ex[i].ids);
    free(d->ex[i].predict);
  }
  free(d->ex);
  memset(d, 0, sizeof *d);
}

/* Appends one example (copies ids[0..n) and predict, NULL: all but the first). */
static int push(const char *cmd, ft_data *d, size_t *cap, const int32_t *ids, const uint8_t *predict, size_t n) {
  if (d->n == *cap) {
    size_t nc = *cap ? 2 * *cap : 64;
    ft_example *e = realloc(d->ex, nc * sizeof *e);
    if (!e) return fg_cli_fail(cmd, NULL, "out of memory"), 1;
    d->ex = e;
    *cap = nc;
  }
  ft_example *e = &d->ex[d->n];
  e->ids = malloc(n * sizeof *e->ids);
  e->predict = malloc(n);
  if (!e->ids || !e->predict) {
    free(e->ids);
    free(e->predict);
    return fg_cli_fail(cmd, NULL, "out of memory"), 1;
  }
  memcpy(e->ids, ids, n * sizeof *ids);
  for (size_t i = 0; i < n; i++) e->predict[i] = predict ? predict[i] : i > 0;
  e->predict[0] = 0;
  e->n = n;
  d->n++;
  d->tokens += n;
  for (size_t i = 1; i < n; i++) d->targets += e->predict[i];
  return 0;
}

/* Consecutive windows of ctx tokens; a last window of one token predicts nothing and is dropped. */
static int windows(const char *cmd, ft_data *d, size_t *cap, const int32_t *ids, size_t n, size_t ctx) {
  for (size_t i = 0; i < n; i += ctx) {
    const size_t m = n - i < ctx ? n - i : ctx;
    if (m < 2) break;
    if (push(cmd, d, cap, ids + i, NULL, m)) return 1;
  }
  return 0;
}

static int encode(const char *cmd, const char *where, const fg_tokenizer *tok, const char *text, size_t len, bool bos,
                  int32_t **ids, size_t *n) {
  if (fg_tokenizer_encode(tok, text, len, bos, ids, n)) {
    fg_cli_fail(cmd, where, "%s", fg_last_error());
    return 1;
  }
  return 0;
}

/* The targets of a conversation: for each assistant turn i, the tokens that rendering turn i
 * adds to the rendering of the turns before it with the assistant's turn opened. */
static int chat_example(const char *cmd, const char *where, const fg_tokenizer *tok, const fg_cli_chat *pick,
                        const fg_chat_msg *m, size_t nm, size_t ctx, ft_data *d, size_t *cap) {
  char *text = NULL;
  size_t tlen = 0, n = 0;
  int32_t *ids = NULL;
  const fg_chat_opts full = {.add_generation_prompt = false};
  if (fg_cli_chat_render(pick, tok, m, nm, &full, &text, &tlen)) return fg_cli_fail(cmd, where, "%s", fg_last_error()), 1;
  int rc = encode(cmd, where, tok, text, tlen, false, &ids, &n);
  fg_chat_free(text);
  if (rc) return 1;
  uint8_t *pred = calloc(n ? n : 1, 1);
  if (!pred) rc = (fg_cli_fail(cmd, NULL, "out of memory"), 1);
  for (size_t i = 0; i < nm && !rc; i++) {
    if (strcmp(m[i].role, "assistant")) continue;
    size_t lo = 0, hi = 0;
    int32_t *pi = NULL, *fi = NULL;
    const fg_chat_opts open = {.add_generation_prompt = true};
    char *t1 = NULL, *t2 = NULL;
    size_t l1 = 0, l2 = 0;
    if (i == 0) {
      rc = (fg_cli_fail(cmd, where, "message 0 is the assistant's: nothing precedes it to predict it from"), 1);
      break;
    }
    if (fg_cli_chat_render(pick, tok, m, i, &open, &t1, &l1) || fg_cli_chat_render(pick, tok, m, i + 1, &full, &t2, &l2)) {
      rc = (fg_cli_fail(cmd, where, "%s", fg_last_error()), 1);
    } else if (!(rc = encode(cmd, where, tok, t1, l1, false, &pi, &lo)) &&
               !(rc = encode(cmd, where, tok, t2, l2, false, &fi, &hi))) {
      /* the turns render as prefixes of the whole conversation, token for token */
      if (lo > hi || hi > n || memcmp(pi, fi, lo * sizeof *pi) || memcmp(fi, ids, hi * sizeof *fi))
        rc = (fg_cli_fail(cmd, where, "assistant message %zu: the rendered turns do not tokenize as prefixes of the "
                          "whole conversation", i), 1);
      for (size_t j = lo; !rc && j < hi; j++) pred[j] = 1;
    }
    fg_chat_free(t1);
    fg_chat_free(t2);
    fg_tokenizer_free_ids(pi);
    fg_tokenizer_free_ids(fi);
  }
  size_t keep = n < ctx ? n : ctx, targets = 0;
  for (size_t j = 1; j < keep; j++) targets += pred[j];
  if (!rc && !targets)
    rc = (fg_cli_fail(cmd, where, "no assistant token within the first %zu tokens (--ctx) to learn from", ctx), 1);
  if (!rc) rc = push(cmd, d, cap, ids, pred, keep);
  free(pred);
  fg_tokenizer_free_ids(ids);
  return rc;
}

int ft_data_load(const char *cmd, const char *path, ft_format fmt, const fg_tokenizer *tok, const fg_cli_chat *pick,
                 size_t ctx, ft_data *out) {
  memset(out, 0, sizeof *out);
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  if (fg_cli_read_file(path, 0, &buf, &len)) return fg_cli_report(cmd, path), 1;
  const bool bos = fg_tokenizer_add_bos(tok);
  int rc = 0;
  if (fmt == FT_TEXT) {
    int32_t *ids = NULL;
    size_t n = 0;
    rc = encode(cmd, path, tok, (const char *)buf, len, bos, &ids, &n);
    if (!rc) rc = windows(cmd, out, &cap, ids, n, ctx);
    fg_tokenizer_free_ids(ids);
  } else {
    size_t line = 0;
    for (size_t i = 0; i < len && !rc;) {
      size_t j = i;
      while (j < len && buf[j] != '\n') j++;
      line++;
      char where[4200];
      snprintf(where, sizeof where, "%s:%zu", path, line);
      size_t a = i, b = j;
      while (a < b && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\r')) a++;
      i = j + 1;
      if (a == b) continue;
      cJSON *root = cJSON_ParseWithLength((const char *)buf + a, b - a);
      if (!root || !cJSON_IsObject(root)) {
        rc = (fg_cli_fail(cmd, where, "not a JSON object"), 1);
      } else if (fmt == FT_JSONL) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "text");
        if (!cJSON_IsString(t)) {
          rc = (fg_cli_fail(cmd, where, "expected {\"text\": \"...\"}"), 1);
        } else {
          int32_t *ids = NULL;
          size_t n = 0;
          rc = encode(cmd, where, tok, t->valuestring, strlen(t->valuestring), bos, &ids, &n);
          if (!rc) rc = windows(cmd, out, &cap, ids, n, ctx);
          fg_tokenizer_free_ids(ids);
        }
      } else {
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "messages");
        const size_t nm = cJSON_IsArray(ms) ? (size_t)cJSON_GetArraySize(ms) : 0;
        fg_chat_msg *m = nm ? calloc(nm, sizeof *m) : NULL;
        if (!nm) rc = (fg_cli_fail(cmd, where, "expected {\"messages\": [{\"role\": ..., \"content\": ...}, ...]}"), 1);
        else if (!m) rc = (fg_cli_fail(cmd, NULL, "out of memory"), 1);
        size_t k = 0;
        for (const cJSON *e = ms ? ms->child : NULL; !rc && e; e = e->next, k++) {
          const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "role"), *c = cJSON_GetObjectItemCaseSensitive(e, "content");
          if (!cJSON_IsString(r) || !cJSON_IsString(c))
            rc = (fg_cli_fail(cmd, where, "message %zu: expected string \"role\" and \"content\"", k), 1);
          else
            m[k] = (fg_chat_msg){.role = r->valuestring, .content = c->valuestring};
        }
        if (!rc) rc = chat_example(cmd, where, tok, pick, m, nm, ctx, out, &cap);
        free(m);
      }
      cJSON_Delete(root);
    }
  }
  free(buf);
  if (!rc && !out->n) rc = (fg_cli_fail(cmd, path, "no training sequence (a sequence needs at least 2 tokens)"), 1);
  if (rc) ft_data_free(out);
  return rc;
}

#define FT_KEY_SHUFFLE 0x53485546464c45ull /* the data order of each epoch */

void ft_cursor_order(ft_cursor *c) {
  for (size_t i = 0; i < c->n; i++) c->order[i] = (uint32_t)i;
  if (!c->shuffle) return;
  const uint64_t key = fg_rng_at(c->seed ^ FT_KEY_SHUFFLE, c->epoch);
  for (size_t i = c->n; i-- > 1;) {
    const size_t j = (size_t)(fg_rng_at(key, i) % (i + 1));
    const uint32_t t = c->order[i];
    c->order[i] = c->order[j];
    c->order[j] = t;
  }
}

size_t ft_cursor_next(ft_cursor *c) {
  const size_t e = c->order[c->index++];
  if (c->index == c->n) {
    c->index = 0;
    c->epoch++;
    ft_cursor_order(c);
  }
  return e;
}

bool ft_targets_parse(const char *s, uint32_t *out) {
  uint32_t m = 0;
  const char *p = s;
  while (*p) {
    const char *e = strchr(p, ',');
    const size_t n = e ? (size_t)(e - p) : strlen(p);
    int hit = -1;
    for (int t = 0; t < FG_LORA_TARGET_COUNT; t++) {
      const char *name = fg_lora_target_name((fg_lora_target)t);
      if (strlen(name) == n && !strncmp(p, name, n)) hit = t;
    }
    if (hit < 0) return false;
    m |= 1u << hit;
    p += n + (e ? 1 : 0);
    if (e && !*p) return false;
  }
  *out = m;
  return m != 0;
}
