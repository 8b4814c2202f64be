// Chat templates: every built-in renderer equals jinja2 rendering the checkpoint's own
// template (committed goldens from tests/data/chat/gen_chat_goldens.py; the interop test
// renders them again live) on every conversation and option set, errors included; the
// templates are recognised as their family and near misses (SmolLM3, QwQ, Qwen3-Coder, LFM2,
// Gemma 4, ...) are refused by name; the template text read from a GGUF (default and named)
// and from a Hugging Face directory (a string, a named list, chat_template.jinja); today's
// date for Llama 3.2; forgia tokenize --chat end to end, --template naming a built-in renderer
// and the architecture's renderer for a file without a template.
#include <cjson/cJSON.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "forgia/chat.h"
#include "forgia/gguf.h"
#include "forgia/tokenizer.h"
#include "chat_goldens.h"
#include "testutil.h"

namespace {

using fgt::ChatJson;
using fgt::kChat;
using fgt::slurp;

TEST(Chat, EveryRendererEqualsJinja2OnTheFilesOwnTemplate) {
  size_t n = fgt::check_chat_goldens(kChat + "goldens.json");
  EXPECT_GE(n, 600u);
}

TEST(Chat, NearMissesAreRefusedByName) {
  ChatJson g(kChat + "goldens.json");
  const cJSON *e;
  size_t n = 0;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(g.root, "unrecognised")) {
    std::string text = slurp(kChat + "unrecognised/" + e->valuestring);
    fg_chat_family fam = FG_CHAT_SMOLLM2;
    EXPECT_EQ(fg_chat_recognize(text.data(), text.size(), &fam), FG_ERR_UNSUPPORTED) << e->valuestring
                                                                                       << " was taken for "
                                                                                       << fg_chat_family_name(fam);
    EXPECT_NE(strstr(fg_last_error(), "chat template"), nullptr) << fg_last_error();
    n++;
  }
  EXPECT_GE(n, 8u);
  // A generic ChatML template (no default system turn, no BOS) is none of the families,
  // even though SmolLM2's and LFM2.5's renderings look like it.
  const std::string chatml =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
      "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  fg_chat_family fam;
  EXPECT_EQ(fg_chat_recognize(chatml.data(), chatml.size(), &fam), FG_ERR_UNSUPPORTED);
  EXPECT_EQ(fg_chat_recognize("", 0, &fam), FG_ERR_UNSUPPORTED);
  // One decisive line changed (Gemma 3's system separator) and the family is refused, the
  // message naming the closest family and the missing line.
  std::string g3 = slurp(kChat + "templates/gemma3-4b-it.jinja");
  size_t at = g3.find("['content'] + '\\n\\n'");
  ASSERT_NE(at, std::string::npos);
  g3.replace(at, strlen("['content'] + '\\n\\n'"), "['content'] + '\\n'");
  EXPECT_EQ(fg_chat_recognize(g3.data(), g3.size(), &fam), FG_ERR_UNSUPPORTED);
  EXPECT_NE(strstr(fg_last_error(), "gemma3"), nullptr) << fg_last_error();
}

TEST(Chat, NewlinesSpelledEitherWayAreOneTemplate) {
  // The GGUF and JSON copies of a template spell a newline inside a Jinja string as "\n" or
  // as a newline; both are recognised (SmolLM2's file has newlines, Qwen's has "\n").
  for (const char *name : {"smollm2-135m-instruct.jinja", "qwen3-0.6b.jinja", "llama3-8b-instruct.jinja"}) {
    std::string t = slurp(kChat + "templates/" + name), other;
    bool has_escape = t.find("\\n") != std::string::npos;
    for (size_t i = 0; i < t.size(); i++) {
      if (has_escape && t.compare(i, 2, "\\n") == 0) {
        other += '\n';
        i++;
      } else if (!has_escape && t[i] == '\n') {
        other += "\\n";
      } else {
        other += t[i];
      }
    }
    fg_chat_family a, b;
    ASSERT_EQ(fg_chat_recognize(t.data(), t.size(), &a), FG_OK) << name;
    ASSERT_EQ(fg_chat_recognize(other.data(), other.size(), &b), FG_OK) << name << ": " << fg_last_error();
    EXPECT_EQ(a, b) << name;
  }
}

TEST(Chat, ErrorsNameTheMessage) {
  fg_chat_msg tool[] = {{"user", "q"}, {"tool", "42"}};
  char *out = nullptr;
  size_t len = 0;
  EXPECT_EQ(fg_chat_render(FG_CHAT_QWEN3, tool, 2, nullptr, &out, &len), FG_ERR_INVALID_ARG);
  EXPECT_NE(strstr(fg_last_error(), "message 1"), nullptr) << fg_last_error();
  EXPECT_NE(strstr(fg_last_error(), "\"tool\""), nullptr) << fg_last_error();
  EXPECT_EQ(fg_chat_render(FG_CHAT_QWEN3, tool, 0, nullptr, &out, &len), FG_ERR_INVALID_ARG);
  fg_chat_msg sys[] = {{"system", "s"}, {"user", "u"}};
  EXPECT_EQ(fg_chat_render(FG_CHAT_GEMMA2, sys, 2, nullptr, &out, &len), FG_ERR_INVALID_ARG);
  EXPECT_NE(strstr(fg_last_error(), "message 0"), nullptr) << fg_last_error();
  fg_chat_msg twice[] = {{"user", "a"}, {"user", "b"}};
  EXPECT_EQ(fg_chat_render(FG_CHAT_GEMMA3, twice, 2, nullptr, &out, &len), FG_ERR_INVALID_ARG);
  EXPECT_NE(strstr(fg_last_error(), "message 1"), nullptr) << fg_last_error();
  EXPECT_EQ(fg_chat_render((fg_chat_family)99, twice, 2, nullptr, &out, &len), FG_ERR_INVALID_ARG);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(fg_chat_family_name((fg_chat_family)0), nullptr);
  EXPECT_STREQ(fg_chat_family_name(FG_CHAT_QWEN35), "qwen3.5");
}

TEST(Chat, Llama32AsksForTodaysDateAnd31ForItsOwn) {
  fg_chat_msg m[] = {{"user", "hi"}};
  char today[32];
  time_t now = time(nullptr);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(today, sizeof today, "%d %b %Y", &tm);  // the C locale's month names
  for (const char *name : {"llama3.2-3b-instruct.jinja", "llama3.1-8b-instruct.jinja"}) {
    std::string t = slurp(kChat + "templates/" + name);
    char *out = nullptr;
    size_t len = 0;
    ASSERT_EQ(fg_chat_render_template(t.data(), t.size(), m, 1, nullptr, &out, &len), FG_OK) << fg_last_error();
    std::string want = std::string("Today Date: ") + (strstr(name, "3.2") ? today : "26 Jul 2024") + "\n\n";
    EXPECT_NE(std::string(out).find(want), std::string::npos) << name << ": " << out;
    fg_chat_free(out);
    fg_chat_opts o = {};
    o.date = "01 Jan 2030";
    ASSERT_EQ(fg_chat_render_template(t.data(), t.size(), m, 1, &o, &out, &len), FG_OK);
    EXPECT_NE(std::string(out).find("Today Date: 01 Jan 2030\n"), std::string::npos) << out;
    fg_chat_free(out);
  }
}

// A GGUF holding SmolLM2's tokenizer fixture plus a default and a named chat template.
std::string gguf_with_templates(const fgt::TempDir &d, const std::string &tmpl) {
  fg_gguf_file *src = nullptr;
  EXPECT_EQ(fg_gguf_open((std::string(FORGIA_TEST_DATA) + "/tok/smollm2.gguf").c_str(), FG_MAP_READ, &src), FG_OK);
  fg_gguf_writer *w = nullptr;
  EXPECT_EQ(fg_gguf_writer_create(&w), FG_OK);
  EXPECT_EQ(fg_gguf_writer_copy_all_kv(w, src, nullptr, 0), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_gguf_writer_set_str(w, "tokenizer.chat_template", tmpl.data(), tmpl.size()), FG_OK);
  const char named[] = "{{ 'the tool_use template' }}";
  EXPECT_EQ(fg_gguf_writer_set_str(w, "tokenizer.chat_template.tool_use", named, sizeof named - 1), FG_OK);
  std::string path = d.file("chat.gguf");
  EXPECT_EQ(fg_gguf_writer_finish(w, path.c_str()), FG_OK) << fg_last_error();
  fg_gguf_writer_free(w);
  fg_gguf_close(src);
  return path;
}

TEST(ChatSource, GgufDefaultAndNamedTemplates) {
  fgt::TempDir d;
  std::string tmpl = slurp(kChat + "templates/smollm2-135m-instruct.jinja");
  std::string path = gguf_with_templates(d, tmpl);
  char *t = nullptr;
  size_t n = 0;
  ASSERT_EQ(fg_chat_template_from_path(path.c_str(), nullptr, &t, &n), FG_OK) << fg_last_error();
  EXPECT_EQ(std::string(t, n), tmpl);
  fg_chat_free(t);
  ASSERT_EQ(fg_chat_template_from_path(path.c_str(), "tool_use", &t, &n), FG_OK);
  EXPECT_EQ(std::string(t, n), "{{ 'the tool_use template' }}");
  fg_chat_free(t);
  EXPECT_EQ(fg_chat_template_from_path(path.c_str(), "rag", &t, &n), FG_ERR_NOT_FOUND);
  EXPECT_NE(strstr(fg_last_error(), "tokenizer.chat_template.rag"), nullptr) << fg_last_error();
  // The tokenizer fixture itself carries no template: absent is NOT_FOUND naming the key.
  EXPECT_EQ(fg_chat_template_from_path((std::string(FORGIA_TEST_DATA) + "/tok/smollm2.gguf").c_str(), nullptr, &t, &n),
            FG_ERR_NOT_FOUND);
  EXPECT_NE(strstr(fg_last_error(), "tokenizer.chat_template"), nullptr);
}

TEST(ChatSource, HuggingFaceStringListAndJinjaFile) {
  fgt::TempDir d;
  std::string q3 = slurp(kChat + "templates/qwen3-0.6b.jinja");
  auto config = [&](cJSON *ct) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToObject(c, "chat_template", ct);
    char *s = cJSON_PrintUnformatted(c);
    fgt::write_file(d.file("tokenizer_config.json"), s, strlen(s));
    free(s);
    cJSON_Delete(c);
  };
  char *t = nullptr;
  size_t n = 0;
  config(cJSON_CreateString(q3.c_str()));
  ASSERT_EQ(fg_chat_template_from_hf_dir(d.path.c_str(), nullptr, &t, &n), FG_OK) << fg_last_error();
  EXPECT_EQ(std::string(t, n), q3);
  fg_chat_free(t);
  EXPECT_EQ(fg_chat_template_from_hf_dir(d.path.c_str(), "tool_use", &t, &n), FG_ERR_NOT_FOUND);

  cJSON *list = cJSON_CreateArray();
  for (const char *nm : {"default", "tool_use"}) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", nm);
    cJSON_AddStringToObject(e, "template", (std::string("T:") + nm).c_str());
    cJSON_AddItemToArray(list, e);
  }
  config(list);
  ASSERT_EQ(fg_chat_template_from_hf_dir(d.path.c_str(), nullptr, &t, &n), FG_OK);
  EXPECT_STREQ(t, "T:default");
  fg_chat_free(t);
  ASSERT_EQ(fg_chat_template_from_hf_dir(d.path.c_str(), "tool_use", &t, &n), FG_OK);
  EXPECT_STREQ(t, "T:tool_use");
  fg_chat_free(t);

  // No chat_template in the config: chat_template.jinja beside it (newer transformers).
  fgt::write_file(d.file("tokenizer_config.json"), "{}", 2);
  EXPECT_EQ(fg_chat_template_from_hf_dir(d.path.c_str(), nullptr, &t, &n), FG_ERR_NOT_FOUND);
  fgt::write_file(d.file("chat_template.jinja"), q3.data(), q3.size());
  ASSERT_EQ(fg_chat_template_from_path(d.path.c_str(), nullptr, &t, &n), FG_OK);
  EXPECT_EQ(std::string(t, n), q3);
  fg_chat_free(t);
  // Malformed configs are errors naming the file.
  fgt::write_file(d.file("tokenizer_config.json"), "{\"chat_template\": 7}", 20);
  EXPECT_EQ(fg_chat_template_from_hf_dir(d.path.c_str(), nullptr, &t, &n), FG_ERR_TYPE);
  EXPECT_NE(strstr(fg_last_error(), "tokenizer_config.json"), nullptr);
  fgt::write_file(d.file("tokenizer_config.json"), "{\"chat_template\": [{\"name\": 1}]}", 32);
  EXPECT_EQ(fg_chat_template_from_hf_dir(d.path.c_str(), nullptr, &t, &n), FG_ERR_TYPE);
  fgt::write_file(d.file("tokenizer_config.json"), "{\"chat", 6);
  EXPECT_EQ(fg_chat_template_from_hf_dir(d.path.c_str(), nullptr, &t, &n), FG_ERR_INVALID_JSON);
}

// forgia tokenize --chat: the prompt jinja2 renders from the file's template, then the ids of
// that prompt, with <|im_start|> one id.
TEST(ChatCli, TokenizeChatPrintsThePromptThenItsIds) {
  fgt::TempDir d;
  std::string tmpl = slurp(kChat + "templates/smollm2-135m-instruct.jinja");
  std::string path = gguf_with_templates(d, tmpl);
  ChatJson convs(kChat + "conversations.json");
  char *conv = cJSON_PrintUnformatted(cJSON_GetArrayItem(convs.root, 2));
  fgt::write_file(d.file("m.json"), conv, strlen(conv));
  free(conv);
  std::string out, err;
  ASSERT_EQ(fgt::run(std::string(FORGIA_CLI) + " tokenize " + path + " --chat " + d.file("m.json") +
                         " --add-generation-prompt",
                     &out, &err),
            0)
      << err;
  ChatJson g(kChat + "goldens.json");
  std::string want;
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(g.root, "cases")) {
    if (strcmp(fgt::chat_str(c, "template"), "smollm2-135m-instruct.jinja") == 0 &&
        cJSON_GetObjectItemCaseSensitive(c, "conversation")->valueint == 2 && fgt::chat_flag(c, "add_generation_prompt") &&
        !fgt::chat_flag(c, "no_think") && !fgt::chat_str(c, "date"))
      want = fgt::chat_str(c, "text");
  }
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(out.compare(0, want.size() + 1, want + "\n"), 0) << out;
  std::string ids_line = out.substr(want.size() + 1);
  fg_tokenizer *tok = nullptr;
  ASSERT_EQ(fg_tokenizer_open(path.c_str(), &tok), FG_OK);
  int32_t *ids = nullptr;
  size_t n = 0;
  ASSERT_EQ(fg_tokenizer_encode(tok, want.data(), want.size(), false, &ids, &n), FG_OK);
  std::string expect;
  for (size_t i = 0; i < n; i++) expect += (i ? " " : "") + std::to_string(ids[i]);
  EXPECT_EQ(ids_line, expect + "\n");
  int32_t im_start = fg_tokenizer_index(tok, "<|im_start|>", 12);
  ASSERT_GE(im_start, 0);
  EXPECT_EQ(ids[0], im_start);
  fg_tokenizer_free_ids(ids);
  fg_tokenizer_close(tok);

  // Usage errors; a template no built-in renderer recognises runs in the Jinja interpreter,
  // and one with a syntax error fails naming its line and column.
  EXPECT_EQ(fgt::run(std::string(FORGIA_CLI) + " tokenize " + path + " --text x --chat " + d.file("m.json"), &out, &err),
            2);
  EXPECT_EQ(fgt::run(std::string(FORGIA_CLI) + " tokenize " + path + " --text x --no-think", &out, &err), 2);
  std::string other = gguf_with_templates(d, "{% for m in messages %}<{{ m.role | upper }}>{{ m.content }}{% endfor %}");
  EXPECT_EQ(fgt::run(std::string(FORGIA_CLI) + " tokenize " + other + " --chat " + d.file("m.json"), &out, &err), 0) << err;
  EXPECT_EQ(out.rfind("<USER>Hi!<ASSISTANT>", 0), 0u) << out;
  std::string broken = gguf_with_templates(d, "ok\n{% if %}");
  EXPECT_EQ(fgt::run(std::string(FORGIA_CLI) + " tokenize " + broken + " --chat " + d.file("m.json"), &out, &err), 1);
  EXPECT_NE(err.find("line 2:7"), std::string::npos) << err;
  fgt::write_file(d.file("bad.json"), "[{\"content\": \"x\"}]", 18);
  EXPECT_EQ(fgt::run(std::string(FORGIA_CLI) + " tokenize " + path + " --chat " + d.file("bad.json"), &out, &err), 1);
  EXPECT_NE(err.find("message 0"), std::string::npos) << err;
}

// A GGUF holding SmolLM2's tokenizer fixture under another general.architecture, with the
// given templates (key suffix "" for the default one); none: the file carries no template.
std::string gguf_as(const fgt::TempDir &d, const std::string &file, const std::string &arch,
                    const std::vector<std::pair<std::string, std::string>> &templates) {
  fg_gguf_file *src = nullptr;
  EXPECT_EQ(fg_gguf_open((std::string(FORGIA_TEST_DATA) + "/tok/smollm2.gguf").c_str(), FG_MAP_READ, &src), FG_OK);
  fg_gguf_writer *w = nullptr;
  EXPECT_EQ(fg_gguf_writer_create(&w), FG_OK);
  EXPECT_EQ(fg_gguf_writer_copy_all_kv(w, src, nullptr, 0), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_gguf_writer_set_str(w, "general.architecture", arch.data(), arch.size()), FG_OK);
  for (const auto &t : templates) {
    std::string key = "tokenizer.chat_template" + (t.first.empty() ? "" : "." + t.first);
    EXPECT_EQ(fg_gguf_writer_set_str(w, key.c_str(), t.second.data(), t.second.size()), FG_OK);
  }
  std::string path = d.file(file);
  EXPECT_EQ(fg_gguf_writer_finish(w, path.c_str()), FG_OK) << fg_last_error();
  fg_gguf_writer_free(w);
  fg_gguf_close(src);
  return path;
}

int lines(const std::string &s) { return (int)std::count(s.begin(), s.end(), '\n'); }

std::string tokenize_chat(const std::string &path, const std::string &rest, std::string *err, int *rc) {
  std::string out;
  *rc = fgt::run(std::string(FORGIA_CLI) + " tokenize " + path + " " + rest, &out, err);
  return out;
}

// --template NAME: a built-in renderer's name renders with it whatever the file holds (here
// SmolLM2's template), exactly as a file whose own template is that family's; another NAME is
// the file's tokenizer.chat_template.NAME; a NAME that is neither is one error line.
TEST(ChatCli, TemplateNamesABuiltInRendererWhateverTheFileHolds) {
  fgt::TempDir d;
  ChatJson convs(kChat + "conversations.json");
  char *conv = cJSON_PrintUnformatted(cJSON_GetArrayItem(convs.root, 1));
  fgt::write_file(d.file("m.json"), conv, strlen(conv));
  free(conv);
  const std::string gemma3 = slurp(kChat + "templates/gemma3-4b-it.jinja");
  const std::string smol = gguf_as(
      d, "smol.gguf", "llama", {{"", slurp(kChat + "templates/smollm2-135m-instruct.jinja")}, {"tool_use", gemma3}});
  const std::string own = gguf_as(d, "own.gguf", "llama", {{"", gemma3}});
  std::string err;
  int rc;
  const std::string m = " --chat " + d.file("m.json") + " --add-generation-prompt";
  const std::string want = tokenize_chat(own, m, &err, &rc);
  ASSERT_EQ(rc, 0) << err;
  ASSERT_EQ(want.rfind("<|im_start|><start_of_turn>user\nYou are a terse assistant.\n\nWhat is 2+2?", 0), 0u) << want;
  EXPECT_EQ(tokenize_chat(smol, m + " --template gemma3", &err, &rc), want);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(err, "");
  // The file's own template, and its named one (which is Gemma 3's here).
  std::string smol_out = tokenize_chat(smol, m, &err, &rc);
  EXPECT_EQ(rc, 0) << err;
  EXPECT_EQ(smol_out.find("<start_of_turn>"), std::string::npos) << smol_out;
  EXPECT_EQ(tokenize_chat(smol, m + " --template tool_use", &err, &rc), want);
  EXPECT_EQ(rc, 0) << err;
  // Standard input as the messages.
  EXPECT_EQ(tokenize_chat(smol, "--chat - --add-generation-prompt --template gemma3 < " + d.file("m.json"), &err, &rc),
            want);
  EXPECT_EQ(rc, 0) << err;
  // Neither a built-in renderer nor a template of the file: one line naming both.
  EXPECT_EQ(tokenize_chat(smol, m + " --template chatml", &err, &rc), "");
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_EQ(err.rfind("forgia tokenize: --template: chatml: no built-in renderer", 0), 0u) << err;
  EXPECT_NE(err.find("tokenizer.chat_template.chatml"), std::string::npos) << err;
  EXPECT_NE(err.find("gemma3"), std::string::npos) << err;
}

// A file without any template falls back to its architecture's renderer with one note line
// on stderr and exit 0; an architecture several families share, or none, is one error line
// listing the built-in names.
TEST(ChatCli, NoTemplateFallsBackToTheArchitecturesRenderer) {
  fgt::TempDir d;
  ChatJson convs(kChat + "conversations.json");
  char *conv = cJSON_PrintUnformatted(cJSON_GetArrayItem(convs.root, 2));
  fgt::write_file(d.file("m.json"), conv, strlen(conv));
  free(conv);
  const std::string m = " --chat " + d.file("m.json") + " --add-generation-prompt";
  std::string err;
  int rc;
  for (const char *fam : {"gemma3", "gemma2", "qwen3"}) {
    const std::string jinja = std::string(fam) == "gemma3"   ? "gemma3-4b-it.jinja"
                              : std::string(fam) == "gemma2" ? "gemma2-2b-it.jinja"
                                                             : "qwen3-0.6b.jinja";
    const std::string own =
        gguf_as(d, std::string(fam) + "-own.gguf", "llama", {{"", slurp(kChat + "templates/" + jinja)}});
    const std::string bare = gguf_as(d, std::string(fam) + "-bare.gguf", fam, {});
    const std::string want = tokenize_chat(own, m, &err, &rc);
    ASSERT_EQ(rc, 0) << err;
    EXPECT_EQ(tokenize_chat(bare, m, &err, &rc), want) << fam;
    EXPECT_EQ(rc, 0) << fam;
    EXPECT_EQ(lines(err), 1) << err;
    EXPECT_EQ(err.rfind("forgia tokenize: note: " + bare + " carries no chat template; rendering with the built-in " +
                            fam + " renderer",
                        0),
              0u)
        << err;
    // Bad messages with the fallback: the error alone, one line, no note.
    fgt::write_file(d.file("bad.json"), "[{\"role\": \"user\"}]", 18);
    EXPECT_EQ(tokenize_chat(bare, "--chat " + d.file("bad.json"), &err, &rc), "");
    EXPECT_EQ(rc, 1);
    EXPECT_EQ(lines(err), 1) << err;
    EXPECT_EQ(err.find("note"), std::string::npos) << err;
    // --template names the renderer outright: no note.
    EXPECT_EQ(tokenize_chat(bare, m + " --template " + fam, &err, &rc), want);
    EXPECT_EQ(err, "");
  }
  // llama is Llama 2, 3, 3.1 and SmolLM2 alike: no guess.
  const std::string llama = gguf_as(d, "llama.gguf", "llama", {});
  EXPECT_EQ(tokenize_chat(llama, m, &err, &rc), "");
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("architecture llama has no built-in renderer"), std::string::npos) << err;
  EXPECT_NE(err.find("smollm2, lfm2, qwen2.5, qwen3, qwen3.5, llama3, llama3.1, gemma2, gemma3"), std::string::npos)
      << err;
  EXPECT_EQ(tokenize_chat(llama, m + " --template smollm2", &err, &rc).rfind("<|im_start|>system\n", 0), 0u);
  EXPECT_EQ(rc, 0) << err;

  // A Hugging Face folder: config.json's model_type names the architecture.
  const std::string hf = d.file("hf");
  ASSERT_EQ(mkdir(hf.c_str(), 0755), 0);
  const std::string tj = slurp(std::string(FORGIA_TEST_DATA) + "/tok/gpt2/tokenizer.json");
  fgt::write_file(hf + "/tokenizer.json", tj.data(), tj.size());
  const std::string with_tmpl = d.file("hf-own");
  ASSERT_EQ(mkdir(with_tmpl.c_str(), 0755), 0);
  fgt::write_file(with_tmpl + "/tokenizer.json", tj.data(), tj.size());
  const std::string g3 = slurp(kChat + "templates/gemma3-4b-it.jinja");
  fgt::write_file(with_tmpl + "/chat_template.jinja", g3.data(), g3.size());
  const std::string want = tokenize_chat(with_tmpl, m, &err, &rc);
  ASSERT_EQ(rc, 0) << err;
  // No config.json: nothing names the architecture.
  EXPECT_EQ(tokenize_chat(hf, m, &err, &rc), "");
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("config.json"), std::string::npos) << err;
  const char cfg[] = "{\"model_type\": \"gemma3_text\"}";
  fgt::write_file(hf + "/config.json", cfg, sizeof cfg - 1);
  EXPECT_EQ(tokenize_chat(hf, m, &err, &rc), want);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("note: " + hf + " carries no chat template"), std::string::npos) << err;
  EXPECT_NE(err.find("(gemma3_text)"), std::string::npos) << err;
}

// The library side of the same choice.
TEST(ChatSource, BuiltInByNameAndByArchitecture) {
  fg_chat_family f;
  for (int k = FG_CHAT_SMOLLM2; k <= FG_CHAT_GEMMA3; k++) {
    ASSERT_EQ(fg_chat_family_from_name(fg_chat_family_name((fg_chat_family)k), &f), FG_OK);
    EXPECT_EQ(f, (fg_chat_family)k);
  }
  EXPECT_EQ(fg_chat_family_from_name("Gemma3", &f), FG_ERR_NOT_FOUND);
  EXPECT_EQ(fg_chat_family_from_name("", &f), FG_ERR_NOT_FOUND);
  const struct {
    const char *arch;
    fg_chat_family f;
  } mapped[] = {{"gemma2", FG_CHAT_GEMMA2}, {"gemma3", FG_CHAT_GEMMA3}, {"gemma3_text", FG_CHAT_GEMMA3},
                {"qwen3", FG_CHAT_QWEN3},   {"qwen35", FG_CHAT_QWEN35}, {"qwen35moe", FG_CHAT_QWEN35}};
  for (const auto &a : mapped) {
    ASSERT_EQ(fg_chat_family_for_arch(a.arch, &f), FG_OK) << a.arch;
    EXPECT_EQ(f, a.f) << a.arch;
  }
  for (const char *a : {"llama", "qwen2", "lfm2", "qwen3moe", "", "GEMMA3"}) {
    EXPECT_EQ(fg_chat_family_for_arch(a, &f), FG_ERR_NOT_FOUND) << a;
    EXPECT_NE(strstr(fg_last_error(), "gemma3"), nullptr) << fg_last_error();
  }
  char *arch = nullptr;
  ASSERT_EQ(fg_chat_arch_from_path((std::string(FORGIA_TEST_DATA) + "/tok/smollm2.gguf").c_str(), &arch), FG_OK);
  EXPECT_STREQ(arch, "llama");
  fg_chat_free(arch);
  EXPECT_EQ(fg_chat_arch_from_path((std::string(FORGIA_TEST_DATA) + "/tok/gpt2").c_str(), &arch), FG_ERR_NOT_FOUND);
  EXPECT_EQ(fg_chat_arch_from_path("/nonexistent/x.gguf", &arch), FG_ERR_NOT_FOUND);
}

}  // namespace
