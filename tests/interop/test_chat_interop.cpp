// Chat templates against jinja2 itself: tests/data/chat/gen_chat_goldens.py renders every
// checkpoint template on every conversation live (jinja2 from the test venv, set up as Hugging
// Face's apply_chat_template sets it up), its output must be the committed goldens byte for
// byte (so the cpu test's goldens are what jinja2 gives today), and forgia's built-in renderers
// must give each of those renderings (and refuse where jinja2 raised).
#include <gtest/gtest.h>

#include <string>

#include "chat_goldens.h"
#include "testutil.h"

namespace {

TEST(ChatInterop, BuiltInRenderersEqualJinja2Live) {
  fgt::TempDir dir;
  std::string out, err;
  const std::string cmd = std::string("'") + FORGIA_PYTHON + "' '" + FORGIA_SOURCE_DIR +
                          "/tests/data/chat/gen_chat_goldens.py' --out '" + dir.path + "'";
  ASSERT_EQ(0, fgt::run(cmd, &out, &err)) << "gen_chat_goldens.py failed: " << err;
  EXPECT_EQ(fgt::slurp(dir.file("goldens.json")), fgt::slurp(fgt::kChat + "goldens.json"))
      << "jinja2 now renders differently from the committed goldens: rerun gen_chat_goldens.py";
  EXPECT_GE(fgt::check_chat_goldens(dir.file("goldens.json")), 600u);
}

}  // namespace
