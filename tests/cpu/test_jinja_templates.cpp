// The committed chat templates (tests/data/chat/templates/ and unrecognised/) rendered by
// forgia's Jinja interpreter on every context of jinja_goldens.json, byte-equal to jinja2
// (tests/data/chat/gen_jinja_goldens.py writes the goldens; tests/data/chat/jinja_templates.py
// compares the llama.cpp sdist's templates live). A case jinja2 raises on must fail here too.
#include <cjson/cJSON.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "forgia/chat.h"
#include "forgia/jinja.h"
#include "testutil.h"

namespace {

const std::string kChat = std::string(FORGIA_TEST_DATA) + "/chat/";

std::string slurp(const std::string &path) {
  std::vector<uint8_t> b = fgt::read_file(path);
  return std::string(b.begin(), b.end());
}

struct Goldens {
  cJSON *root = nullptr;
  Goldens() {
    std::string text = slurp(kChat + "jinja_goldens.json");
    root = cJSON_ParseWithLength(text.data(), text.size());
  }
  ~Goldens() { cJSON_Delete(root); }
};

} // namespace

TEST(JinjaTemplates, CommittedTemplatesRenderAsJinja2) {
  setenv("TZ", "UTC", 1);
  tzset();
  Goldens g;
  ASSERT_NE(g.root, nullptr);
  fg_jinja_opts o = {};
  o.now = (int64_t)cJSON_GetObjectItemCaseSensitive(g.root, "now")->valuedouble;
  std::vector<std::string> ctx;
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(g.root, "contexts")) {
    char *s = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "vars"));
    ctx.emplace_back(s);
    free(s);
  }
  ASSERT_GE(ctx.size(), 15u);
  std::map<std::string, fg_jinja *> compiled;
  size_t n = 0, equal = 0, errors = 0;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(g.root, "cases")) {
    std::string name = cJSON_GetObjectItemCaseSensitive(c, "template")->valuestring;
    if (!compiled.count(name)) {
      std::string t = slurp(kChat + name);
      fg_jinja *j = nullptr;
      ASSERT_EQ(fg_jinja_compile(t.data(), t.size(), &j), FG_OK) << name << ": " << fg_last_error();
      compiled[name] = j;
    }
    size_t ci = (size_t)cJSON_GetObjectItemCaseSensitive(c, "context")->valuedouble;
    ASSERT_LT(ci, ctx.size());
    char *out = nullptr;
    size_t len = 0;
    fg_status s = fg_jinja_render(compiled[name], ctx[ci].data(), ctx[ci].size(), &o, &out, &len);
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, "text");
    n++;
    if (want) {
      EXPECT_EQ(s, FG_OK) << name << " context " << ci << ": " << fg_last_error();
      if (s == FG_OK) {
        EXPECT_EQ(std::string(out, len), want->valuestring) << name << " context " << ci;
        equal += std::string(out, len) == want->valuestring;
      }
    } else {
      EXPECT_NE(s, FG_OK) << name << " context " << ci << " rendered, jinja2 raised";
      errors += s != FG_OK;
    }
    fg_jinja_free_text(out);
  }
  for (auto &kv : compiled) fg_jinja_free(kv.second);
  EXPECT_EQ(equal + errors, n);
  EXPECT_EQ(n, 18 * ctx.size()); // 10 recognised families' templates and 8 others
}

// The recognised families' built-in renderers and the interpreter agree on text
// conversations: the fast path is only taken where it is byte-equal.
TEST(JinjaTemplates, BuiltInFastPathEqualsTheInterpreter) {
  Goldens g;
  ASSERT_NE(g.root, nullptr);
  const cJSON *c;
  size_t compared = 0;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(g.root, "cases")) {
    std::string name = cJSON_GetObjectItemCaseSensitive(c, "template")->valuestring;
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, "text");
    if (name.rfind("templates/", 0) != 0 || !want || name.find("llama3.2") != std::string::npos) continue;
    size_t ci = (size_t)cJSON_GetObjectItemCaseSensitive(c, "context")->valuedouble;
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g.root, "contexts"),
                                                                            (int)ci),
                                                         "vars");
    if (cJSON_GetObjectItemCaseSensitive(vars, "tools")) continue;
    std::vector<fg_chat_msg> msgs;
    bool text_only = true;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(vars, "messages")) {
      const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role"), *ct = cJSON_GetObjectItemCaseSensitive(m, "content");
      if (cJSON_GetArraySize(m) != 2 || !cJSON_IsString(ct) || !cJSON_IsString(r)) text_only = false;
      else msgs.push_back({r->valuestring, ct->valuestring});
    }
    if (!text_only) continue;
    std::string t = slurp(kChat + name);
    fg_chat_family fam;
    ASSERT_EQ(fg_chat_recognize(t.data(), t.size(), &fam), FG_OK) << name;
    fg_chat_opts o = {};
    o.add_generation_prompt = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(vars, "add_generation_prompt"));
    o.no_think = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(vars, "enable_thinking"));
    o.bos_token = cJSON_GetObjectItemCaseSensitive(vars, "bos_token")->valuestring;
    char *out = nullptr;
    size_t len = 0;
    ASSERT_EQ(fg_chat_render(fam, msgs.data(), msgs.size(), &o, &out, &len), FG_OK) << name << " " << fg_last_error();
    EXPECT_EQ(std::string(out, len), want->valuestring) << name << " context " << ci;
    fg_chat_free(out);
    compared++;
  }
  EXPECT_GT(compared, 50u);
}

// forgia chat-template: a template no built-in renderer knows, on a conversation with tool
// calls and a tools list (--messages, --vars), equal to jinja2's golden; --jsonl gives one
// line per context, errors as {"error": ...} lines.
TEST(JinjaTemplates, ChatTemplateCommand) {
  Goldens g;
  ASSERT_NE(g.root, nullptr);
  const cJSON *contexts = cJSON_GetObjectItemCaseSensitive(g.root, "contexts"), *c, *pick = nullptr, *vars = nullptr;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(g.root, "cases")) {
    std::string name = cJSON_GetObjectItemCaseSensitive(c, "template")->valuestring;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(contexts, (int)cJSON_GetObjectItemCaseSensitive(c, "context")->valuedouble), "vars");
    if (name == "unrecognised/hermes3-llama3.1-8b-tool-use.jinja" && cJSON_GetObjectItemCaseSensitive(c, "text") &&
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(v, "messages")) == 5 &&
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "add_generation_prompt")) &&
        cJSON_GetObjectItemCaseSensitive(v, "tools")) {
      pick = c;
      vars = v;
      break;
    }
  }
  ASSERT_NE(pick, nullptr);
  fgt::TempDir d;
  char *m = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(vars, "messages"));
  fgt::write_file(d.file("m.json"), m, strlen(m));
  free(m);
  cJSON *x = cJSON_CreateObject();
  cJSON_AddItemToObject(x, "tools", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(vars, "tools"), 1));
  cJSON_AddStringToObject(x, "eos_token", cJSON_GetObjectItemCaseSensitive(vars, "eos_token")->valuestring);
  char *xs = cJSON_PrintUnformatted(x);
  fgt::write_file(d.file("v.json"), xs, strlen(xs));
  free(xs);
  cJSON_Delete(x);
  const std::string tmpl = kChat + "unrecognised/hermes3-llama3.1-8b-tool-use.jinja";
  std::string out, err;
  ASSERT_EQ(fgt::run(std::string(FORGIA_CLI) + " chat-template " + tmpl + " --messages " + d.file("m.json") + " --vars " +
                         d.file("v.json") + " --bos '" + cJSON_GetObjectItemCaseSensitive(vars, "bos_token")->valuestring +
                         "' --add-generation-prompt",
                     &out, &err),
            0)
      << err;
  EXPECT_EQ(out, std::string(cJSON_GetObjectItemCaseSensitive(pick, "text")->valuestring) + "\n");
  // --jsonl: a render, a raise, a syntax error.
  const std::string lines = "{\"context\": {\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}}\n"
                            "{\"context\": {}, \"template\": \"" + d.file("raise.jinja") + "\"}\n"
                            "{\"context\": {}, \"template\": \"" + d.file("broken.jinja") + "\"}\n";
  fgt::write_file(d.file("raise.jinja"), "{{ raise_exception('no system role') }}", 39);
  fgt::write_file(d.file("broken.jinja"), "{% for %}", 9);
  fgt::write_file(d.file("b.jsonl"), lines.data(), lines.size());
  fgt::write_file(d.file("t.jinja"), "{{ messages[0].content | upper }}", 33);
  ASSERT_EQ(fgt::run(std::string(FORGIA_CLI) + " chat-template " + d.file("t.jinja") + " --jsonl " + d.file("b.jsonl"),
                     &out, &err),
            0)
      << err;
  EXPECT_EQ(out, "{\"text\":\"HI\"}\n{\"error\":\"no system role\"}\n"
                 "{\"error\":\"jinja: line 1:8: expected a variable name to assign\"}\n");
  EXPECT_EQ(fgt::run(std::string(FORGIA_CLI) + " chat-template " + d.file("t.jinja"), &out, &err), 2);
}
