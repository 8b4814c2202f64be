/* libFuzzer target for the Jinja interpreter: a template compiled and rendered on a context.
 *
 * Input: the template text, then optionally '\0' and the context's JSON; without one, a
 * conversation with a system turn, tool calls, a tool result and a tools list (what chat
 * templates read). Syntax errors, template errors and malformed JSON are fine; crashes, leaks,
 * hangs and output past the bound are not: the render runs under small bounds, and a
 * successful one must stay within them.
 *
 *   ./fuzz_jinja -max_total_time=60 corpus seeds      (seeds: tests/data/chat/templates/)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/jinja.h"

static const char default_context[] =
    "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_generation_prompt\": true, \"messages\": ["
    "{\"role\": \"system\", \"content\": \"Be brief.\"},"
    "{\"role\": \"user\", \"content\": \"Weather in Paris?\"},"
    "{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\","
    " \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}]},"
    "{\"role\": \"tool\", \"tool_call_id\": \"call_1\", \"content\": \"18 C\"},"
    "{\"role\": \"assistant\", \"content\": \"<think>ok</think>It is 18 degrees.\"},"
    "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Thanks\"}]}],"
    "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather.\","
    " \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const char *nul = memchr(text, 0, size);
  size_t tlen = nul ? (size_t)(nul - text) : size;
  const char *ctx = nul ? nul + 1 : default_context;
  size_t clen = nul ? size - tlen - 1 : sizeof default_context - 1;
  fg_jinja *j = NULL;
  if (fg_jinja_compile(text, tlen, &j) != FG_OK) {
    if (!fg_last_error()[0]) abort(); /* every failure says why */
    return 0;
  }
  fg_jinja_opts o = {.max_output = 1 << 16, .max_steps = 200000, .max_depth = 200, .max_memory = 64u << 20, .now = 1764633600};
  char *out = NULL;
  size_t n = 0;
  fg_status s = fg_jinja_render(j, ctx, clen, &o, &out, &n);
  if (s == FG_OK && (!out || n > o.max_output || out[n] != 0)) abort();
  if (s != FG_OK && (out || !fg_last_error()[0])) abort();
  fg_jinja_free_text(out);
  fg_jinja_free(j);
  return 0;
}
