// Chat template goldens (tests/data/chat/gen_chat_goldens.py): what the cpu test checks
// against the committed goldens.json and the interop test against a live jinja2 rendering.
#pragma once

#include <cjson/cJSON.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/chat.h"
#include "testutil.h"

namespace fgt {

inline const std::string kChat = std::string(FORGIA_TEST_DATA) + "/chat/";

inline std::string slurp(const std::string &path) {
  std::vector<uint8_t> b = fgt::read_file(path);
  return std::string(b.begin(), b.end());
}

struct ChatJson {
  cJSON *root = nullptr;
  explicit ChatJson(const std::string &path) {
    std::string s = slurp(path);
    root = cJSON_ParseWithLength(s.data(), s.size());
  }
  ~ChatJson() { cJSON_Delete(root); }
};

inline const char *chat_str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : nullptr;
}
inline bool chat_flag(const cJSON *o, const char *k) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k)); }

inline std::vector<fg_chat_msg> chat_messages(const cJSON *conv) {
  std::vector<fg_chat_msg> v;
  const cJSON *m;
  cJSON_ArrayForEach(m, conv) v.push_back({chat_str(m, "role"), chat_str(m, "content")});
  return v;
}

// Checks every case of a goldens.json against forgia's renderers; returns the count checked.
inline size_t check_chat_goldens(const std::string &goldens_path) {
  ChatJson g(goldens_path), convs(kChat + "conversations.json");
  EXPECT_NE(g.root, nullptr) << goldens_path;
  EXPECT_NE(convs.root, nullptr);
  if (!g.root || !convs.root) return 0;
  const cJSON *templates = cJSON_GetObjectItemCaseSensitive(g.root, "templates");
  size_t checked = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, templates) {
    std::string text = slurp(kChat + "templates/" + t->string);
    fg_chat_family fam;
    EXPECT_EQ(fg_chat_recognize(text.data(), text.size(), &fam), FG_OK) << t->string << ": " << fg_last_error();
    EXPECT_STREQ(fg_chat_family_name(fam), chat_str(t, "family")) << t->string;
  }
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(g.root, "cases")) {
    const char *name = chat_str(c, "template");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(templates, name);
    std::string text = slurp(kChat + "templates/" + name);
    int ci = cJSON_GetObjectItemCaseSensitive(c, "conversation")->valueint;
    std::vector<fg_chat_msg> msgs = chat_messages(cJSON_GetArrayItem(convs.root, ci));
    fg_chat_opts o = {};
    o.add_generation_prompt = chat_flag(c, "add_generation_prompt");
    o.no_think = chat_flag(c, "no_think");
    o.bos_token = chat_str(t, "bos");
    o.date = chat_str(c, "date");
    fg_chat_family fam;
    EXPECT_EQ(fg_chat_recognize(text.data(), text.size(), &fam), FG_OK);
    char *out = nullptr;
    size_t len = 0;
    fg_status s = fg_chat_render(fam, msgs.data(), msgs.size(), &o, &out, &len);
    std::string what = std::string(name) + " conversation " + std::to_string(ci) + (o.add_generation_prompt ? " +gen" : "") +
                       (o.no_think ? " no_think" : "") + (o.date ? " date" : "");
    if (chat_str(c, "error")) {
      EXPECT_EQ(s, FG_ERR_INVALID_ARG) << what << ": jinja2 raised \"" << chat_str(c, "error") << "\"";
    } else {
      EXPECT_EQ(s, FG_OK) << what << ": " << fg_last_error();
      if (s == FG_OK) {
        EXPECT_EQ(std::string(out, len), std::string(chat_str(c, "text"))) << what;
        EXPECT_EQ(strlen(out), len) << what;
      }
    }
    fg_chat_free(out);
    checked++;
  }
  return checked;
}

}  // namespace fgt
