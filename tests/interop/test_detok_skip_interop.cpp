// forgia detokenize --skip-special against Hugging Face `tokenizers`' decode(ids,
// skip_special_tokens=True), live, on every committed Hugging Face tokenizer fixture (byte-level
// BPE and the three SentencePiece-style decoders): id lists of the fixture's own encodings
// with its added tokens (special and not) put first, last and between, and the plain decode
// alongside.
#include <cjson/cJSON.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testutil.h"

namespace {

const char kScript[] = R"PY(
import json, sys
from tokenizers import Tokenizer
d, out = sys.argv[1], sys.argv[2]
res = []
for name in ["gpt2", "hf_spm_gemma", "hf_spm_llama2", "hf_spm_metaspace", "llama3", "qwen2", "qwen35", "smollm"]:
    path = f"{d}/{name}/tokenizer.json"
    tk = Tokenizer.from_file(path)
    added = [e["id"] for e in json.load(open(path, encoding="utf-8"))["added_tokens"]]
    special = [e["id"] for e in json.load(open(path, encoding="utf-8"))["added_tokens"] if e.get("special")]
    plain = [e for e in added if e not in special]
    extra = plain[:1] if plain else []
    for text in ["Hello world", " leading space", "a<|im_start|>b", "x  y", "caf\u00e9 \U0001F600"]:
        ids = tk.encode(text, add_special_tokens=False).ids
        for case in (ids, [special[0]] + ids + [special[-1]], special[:2] + extra + ids,
                     ids[:1] + [special[0]] + ids[1:], extra + ids, [special[0]]):
            res.append({"tok": name, "ids": case, "skip": tk.decode(case, skip_special_tokens=True),
                        "plain": tk.decode(case, skip_special_tokens=False)})
json.dump(res, open(out, "w", encoding="utf-8"))
)PY";

TEST(DetokenizeInterop, SkipSpecialEqualsTokenizers) {
  fgt::TempDir d;
  fgt::write_file(d.file("gen.py"), kScript, sizeof kScript - 1);
  std::string out, err;
  ASSERT_EQ(fgt::run(std::string("'") + FORGIA_PYTHON + "' " + d.file("gen.py") + " " + FORGIA_TEST_DATA + "/tok " +
                         d.file("cases.json"),
                     &out, &err),
            0)
      << err;
  std::vector<uint8_t> b = fgt::read_file(d.file("cases.json"));
  cJSON *root = cJSON_ParseWithLength(reinterpret_cast<const char *>(b.data()), b.size());
  ASSERT_TRUE(cJSON_IsArray(root));
  int n = 0, skipped_something = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, root) {
    std::string ids;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "ids")) ids += (ids.empty() ? "" : " ") + std::to_string(e->valueint);
    const std::string tok = std::string(FORGIA_TEST_DATA) + "/tok/" + cJSON_GetObjectItem(c, "tok")->valuestring;
    const std::string skip = cJSON_GetObjectItem(c, "skip")->valuestring;
    const std::string plain = cJSON_GetObjectItem(c, "plain")->valuestring;
    ASSERT_EQ(fgt::run(std::string(FORGIA_CLI) + " detokenize " + tok + " '" + ids + "' --skip-special", &out, &err), 0)
        << err;
    EXPECT_EQ(out, skip + "\n") << tok << " [" << ids << "]";
    EXPECT_EQ(err, "");
    ASSERT_EQ(fgt::run(std::string(FORGIA_CLI) + " detokenize " + tok + " '" + ids + "'", &out, &err), 0) << err;
    EXPECT_EQ(out, plain + "\n") << tok << " [" << ids << "] (plain)";
    skipped_something += skip != plain;
    n++;
  }
  cJSON_Delete(root);
  EXPECT_EQ(n, 8 * 5 * 6);
  EXPECT_GT(skipped_something, n / 2);
}

}  // namespace
