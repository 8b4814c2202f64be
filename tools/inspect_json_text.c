/* forgia inspect on a JSON text: a trainer_state.json shown as inside a checkpoint
 * directory, a Hugging Face tokenizer.json or config.json named and summarised, any other
 * JSON summarised by its top level. The file's name only decides what a text must be when it
 * is one of those three names; otherwise the content does. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/trainer_state.h"
#include "inspect.h"
#include "inspect_frame.h"
#include "util_json.h"
#include "util_report.h"
#include "util_text.h"

/* Readable output lists at most this many keys or added tokens without --full. */
#define LIST_LIMIT 64

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static const char *str_of(const cJSON *o, const char *k) {
  const cJSON *v = get(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static cJSON *jstr(const char *s) { return s ? fg_cli_json_bytes(s, strlen(s)) : cJSON_CreateNull(); }

static void put_short(const char *s) {
  size_t n = strlen(s);
  char buf[60 * 4 + 1];
  fg_cli_escape_into(buf, sizeof buf, s, n > 60 ? 60 : n);
  fputs(buf, stdout);
  if (n > 60) printf("... (%zu bytes)", n);
}

static const char *kind_of(const cJSON *v) {
  if (cJSON_IsObject(v)) return "object";
  if (cJSON_IsArray(v)) return "array";
  if (cJSON_IsString(v)) return "string";
  if (cJSON_IsNumber(v)) return "number";
  if (cJSON_IsBool(v)) return "bool";
  return "null";
}

/* A value on one line: scalars as they are (numbers in their shortest exact decimal),
 * objects and arrays by their size. */
static void put_value(const cJSON *v) {
  char buf[FG_F64_TEXT_MAX];
  if (cJSON_IsString(v)) put_short(v->valuestring);
  else if (cJSON_IsNumber(v)) {
    fg_trainer_state_f64_text(v->valuedouble, buf);
    fputs(buf, stdout);
  }
  else if (cJSON_IsBool(v)) fputs(cJSON_IsTrue(v) ? "true" : "false", stdout);
  else if (cJSON_IsObject(v)) printf("{%d keys}", cJSON_GetArraySize(v));
  else if (cJSON_IsArray(v)) printf("[%d elements]", cJSON_GetArraySize(v));
  else fputs("null", stdout);
}

/* The top level: each key and its value, or the array's length. */
static void print_top(const cJSON *root, bool full) {
  if (!cJSON_IsObject(root)) return;
  int i = 0, n = cJSON_GetArraySize(root);
  for (const cJSON *c = root->child; c; c = c->next, i++) {
    if (!full && i == LIST_LIMIT) {
      printf("  ... %d more (--full lists them)\n", n - i);
      break;
    }
    printf("  ");
    fg_cli_puts_escaped(stdout, c->string, 28);
    printf(" ");
    put_value(c);
    printf("\n");
  }
}

static cJSON *keys_json(const cJSON *root) {
  cJSON *a = cJSON_CreateArray();
  for (const cJSON *c = root->child; c; c = c->next) cJSON_AddItemToArray(a, jstr(c->string));
  return a;
}

/* ---------------------------------------------------------------- trainer_state.json */

static int trainer_state(const char *path, const char *text, size_t len, const fg_cli_inspect_opts *o) {
  fg_trainer_state s;
  if (fg_trainer_state_parse(text, len, path, &s) != FG_OK) {
    fg_cli_report("inspect", path);
    return 1;
  }
  if (o->json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "trainer_state");
    cJSON_AddItemToObject(root, "path", jstr(path));
    cJSON_AddItemToObject(root, "trainer_state", fg_cli_trainer_state_json(&s));
    return fg_cli_json_print("inspect", path, root);
  }
  fg_cli_puts_escaped(stdout, path, 0);
  printf(": trainer state (%s v%u)\n", FG_TRAINER_STATE_FORMAT, s.version);
  fg_cli_trainer_state_print(&s);
  return 0;
}

/* ---------------------------------------------------------------- tokenizer.json */

/* A pipeline stage's type: "ByteLevel", "Sequence(NFC, Lowercase)", or NULL when absent. */
static char *stage(const cJSON *root, const char *key) {
  const cJSON *v = get(root, key);
  const char *t = cJSON_IsObject(v) ? str_of(v, "type") : NULL;
  if (!t) return NULL;
  char *out = strdup(t);
  if (strcmp(t, "Sequence") != 0) return out;
  for (const cJSON *c = v->child; c && out; c = c->next) {
    if (!cJSON_IsArray(c)) continue;
    char *acc = NULL;
    size_t k = 0;
    FILE *m = open_memstream(&acc, &k);
    if (!m) break;
    fprintf(m, "Sequence(");
    int i = 0;
    for (const cJSON *e = c->child; e; e = e->next) {
      const char *et = cJSON_IsObject(e) ? str_of(e, "type") : NULL;
      fprintf(m, "%s%s", i++ ? ", " : "", et ? et : "?");
    }
    fprintf(m, ")");
    if (fclose(m) == 0) {
      free(out);
      out = acc;
    } else {
      free(acc);
    }
    break;
  }
  return out;
}

static const char *const stages[] = {"normalizer", "pre_tokenizer", "post_processor", "decoder"};

static int tokenizer(const char *path, const cJSON *root, const fg_cli_inspect_opts *o) {
  const cJSON *model = get(root, "model"), *vocab = get(model, "vocab"), *merges = get(model, "merges");
  const cJSON *added = get(root, "added_tokens");
  const char *type = str_of(model, "type");
  int nv = cJSON_IsObject(vocab) || cJSON_IsArray(vocab) ? cJSON_GetArraySize(vocab) : 0;
  int nm = cJSON_IsArray(merges) ? cJSON_GetArraySize(merges) : -1;
  int na = cJSON_IsArray(added) ? cJSON_GetArraySize(added) : 0, ns = 0;
  for (const cJSON *a = cJSON_IsArray(added) ? added->child : NULL; a; a = a->next) ns += cJSON_IsTrue(get(a, "special"));
  char *st[4];
  for (int i = 0; i < 4; i++) st[i] = stage(root, stages[i]);
  int rc = 0;
  if (o->json) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "format", "hf_tokenizer");
    cJSON_AddItemToObject(r, "path", jstr(path));
    cJSON_AddItemToObject(r, "model", jstr(type));
    cJSON_AddNumberToObject(r, "vocab", nv);
    if (nm >= 0) cJSON_AddNumberToObject(r, "merges", nm);
    for (int i = 0; i < 4; i++) cJSON_AddItemToObject(r, stages[i], jstr(st[i]));
    cJSON *at = cJSON_AddArrayToObject(r, "added_tokens");
    for (const cJSON *a = cJSON_IsArray(added) ? added->child : NULL; a; a = a->next) {
      cJSON *t = cJSON_CreateObject();
      const cJSON *id = get(a, "id");
      if (cJSON_IsNumber(id)) cJSON_AddNumberToObject(t, "id", id->valuedouble);
      else cJSON_AddNullToObject(t, "id");
      cJSON_AddItemToObject(t, "content", jstr(str_of(a, "content")));
      cJSON_AddBoolToObject(t, "special", cJSON_IsTrue(get(a, "special")));
      cJSON_AddItemToArray(at, t);
    }
    rc = fg_cli_json_print("inspect", path, r);
  } else {
    fg_cli_puts_escaped(stdout, path, 0);
    printf(": Hugging Face tokenizer.json: model ");
    fg_cli_puts_escaped(stdout, type ? type : "(no type)", 0);
    printf(", %d vocab entries", nv);
    if (nm >= 0) printf(", %d merges", nm);
    printf(", %d added tokens (%d special)\n", na, ns);
    for (int i = 0; i < 4; i++) {
      printf("  %-16s ", stages[i]);
      fg_cli_puts_escaped(stdout, st[i] ? st[i] : "none", 0);
      printf("\n");
    }
    if (na) printf("added tokens (id, content):\n");
    int i = 0;
    for (const cJSON *a = cJSON_IsArray(added) ? added->child : NULL; a; a = a->next, i++) {
      if (!o->full && i == LIST_LIMIT) {
        printf("  ... %d more (--full lists them)\n", na - i);
        break;
      }
      const cJSON *id = get(a, "id");
      const char *c = str_of(a, "content");
      if (cJSON_IsNumber(id)) printf("  %-8.0f ", id->valuedouble);
      else printf("  %-8s ", "?");
      put_short(c ? c : "");
      printf("%s\n", cJSON_IsTrue(get(a, "special")) ? "  (special)" : "");
    }
  }
  for (int i = 0; i < 4; i++) free(st[i]);
  return rc;
}

/* ---------------------------------------------------------------- config.json, any JSON */

static int config(const char *path, const cJSON *root, const fg_cli_inspect_opts *o) {
  const char *mt = str_of(root, "model_type");
  const cJSON *arch = get(root, "architectures");
  if (o->json) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "format", "hf_config");
    cJSON_AddItemToObject(r, "path", jstr(path));
    cJSON_AddItemToObject(r, "model_type", jstr(mt));
    cJSON *a = cJSON_AddArrayToObject(r, "architectures");
    for (const cJSON *e = cJSON_IsArray(arch) ? arch->child : NULL; e; e = e->next)
      if (cJSON_IsString(e)) cJSON_AddItemToArray(a, jstr(e->valuestring));
    cJSON_AddItemToObject(r, "keys", keys_json(root));
    return fg_cli_json_print("inspect", path, r);
  }
  fg_cli_puts_escaped(stdout, path, 0);
  printf(": Hugging Face model config: model_type ");
  fg_cli_puts_escaped(stdout, mt ? mt : "(none)", 0);
  int i = 0;
  for (const cJSON *e = cJSON_IsArray(arch) ? arch->child : NULL; e; e = e->next)
    if (cJSON_IsString(e)) {
      printf(i++ ? ", " : ", architectures ");
      fg_cli_puts_escaped(stdout, e->valuestring, 0);
    }
  printf(", %d keys\n", cJSON_GetArraySize(root));
  print_top(root, o->full);
  return 0;
}

static int any_json(const char *path, const cJSON *root, const fg_cli_inspect_opts *o) {
  const bool obj = cJSON_IsObject(root);
  const int n = cJSON_GetArraySize(root);
  if (o->json) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "format", "json");
    cJSON_AddItemToObject(r, "path", jstr(path));
    cJSON_AddStringToObject(r, "type", obj ? "object" : "array");
    cJSON_AddNumberToObject(r, "length", n);
    if (obj) cJSON_AddItemToObject(r, "keys", keys_json(root));
    return fg_cli_json_print("inspect", path, r);
  }
  fg_cli_puts_escaped(stdout, path, 0);
  if (obj) {
    printf(": JSON object, %d keys\n", n);
    print_top(root, o->full);
  } else {
    printf(": JSON array, %d elements", n);
    if (n) printf(" (the first one %s)", kind_of(root->child));
    printf("\n");
  }
  return 0;
}

/* ---------------------------------------------------------------- which one */

/* A parsed value costs a tree node (about 64 bytes) for as little as two bytes of text: the
 * values are counted first, so that memory stays bounded whatever the file holds. A
 * tokenizer.json holds one to two million. */
#define JSON_MAX_VALUES (8u << 20)
/* cJSON's own nesting limit (CJSON_NESTING_LIMIT). */
#define JSON_MAX_DEPTH 1000

/* An upper bound on the values of a text (every value but the root follows '[', '{' or ','
 * outside strings) and its deepest nesting. */
static void measure(const char *text, size_t len, size_t *values, size_t *depth) {
  size_t n = 1, d = 0, dmax = 0;
  bool in_str = false;
  for (size_t i = 0; i < len; i++) {
    const char c = text[i];
    if (in_str) {
      if (c == '\\') i++;
      else if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '[' || c == '{') {
      n++;
      if (++d > dmax) dmax = d;
    } else if (c == ']' || c == '}') {
      d -= d > 0;
    } else if (c == ',') {
      n++;
    }
  }
  *values = n;
  *depth = dmax;
}

int fg_cli_inspect_json_file(const char *path, const char *text, size_t len, const fg_cli_inspect_opts *o) {
  const char *name = base_name(path);
  if (!strcmp(name, FG_TRAINER_STATE_FILE)) return trainer_state(path, text, len, o);
  size_t values, depth;
  measure(text, len, &values, &depth);
  if (values > JSON_MAX_VALUES) {
    fg_cli_fail("inspect", path, "a JSON text of up to %zu values, more than the %u inspect summarises", values,
                JSON_MAX_VALUES);
    return 1;
  }
  if (depth > JSON_MAX_DEPTH) {
    fg_cli_fail("inspect", path, "JSON nested %zu levels deep, more than the %d inspect reads", depth, JSON_MAX_DEPTH);
    return 1;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
  size_t at = end ? (size_t)(end - text) : 0;
  while (root && at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) at++;
  if (!root || at < len) {
    cJSON_Delete(root);
    fg_cli_fail("inspect", path, "starts like JSON but is not valid JSON (at byte %zu of %zu%s)", at, len,
                root ? ": text after the value" : "");
    return 1;
  }
  int rc;
  const cJSON *model = get(root, "model");
  if (cJSON_IsObject(root) && !strcmp(str_of(root, "format") ? str_of(root, "format") : "", FG_TRAINER_STATE_FORMAT)) {
    rc = trainer_state(path, text, len, o);
  } else if (cJSON_IsObject(model) && (get(model, "vocab") || cJSON_IsArray(get(root, "added_tokens")))) {
    rc = tokenizer(path, root, o);
  } else if (!strcmp(name, "tokenizer.json")) {
    fg_cli_fail("inspect", path, "not a Hugging Face tokenizer.json: expected a JSON object with a \"model\" object "
                "holding \"vocab\", found a JSON %s%s", kind_of(root),
                cJSON_IsObject(root) ? " without one" : "");
    rc = 1;
  } else if (cJSON_IsObject(root) && (str_of(root, "model_type") || cJSON_IsArray(get(root, "architectures")))) {
    rc = config(path, root, o);
  } else if (!strcmp(name, "config.json") && !cJSON_IsObject(root)) {
    fg_cli_fail("inspect", path, "not a Hugging Face config.json: expected a JSON object, found a JSON %s",
                kind_of(root));
    rc = 1;
  } else {
    rc = any_json(path, root, o);
  }
  cJSON_Delete(root);
  return rc;
}
