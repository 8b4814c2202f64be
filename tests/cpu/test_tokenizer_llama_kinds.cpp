// The GGUF tokenizer kinds llama.cpp has beyond BPE, SentencePiece and WordPiece, on small
// vocabularies written here: Unigram ("t5": the precompiled charsmap, whitespace options,
// Viterbi, unknown runs), Gemma 4 ("gemma4": BPE over UTF-8 characters with U+2581 spaces,
// newline runs, <0xXX> bytes, BOS forced on) and the detokenizer's space cleaning of a
// byte-level vocabulary with no pre-tokenizer named (llama.cpp's "default"). The expected ids
// and texts are what llama.cpp's tokenizer gives for these files (checked with
// tests/data/tok/llama_tok.cpp when written; the real vocabularies are checked against
// llama.cpp live in interop.tok_llama_goldens). Damaged charsmaps fail with a message.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/gguf.h"
#include "forgia/tokenizer.h"
#include "testutil.h"

namespace {

struct Tok {
  std::string text;
  float score;
  int32_t type;
};

// Writes a tokenizer-only GGUF; extra adds the kind's own keys.
template <class F>
std::string write_vocab(const fgt::TempDir &d, const char *name, const char *model, const std::vector<Tok> &toks,
                        F extra) {
  fg_gguf_writer *w = nullptr;
  EXPECT_EQ(fg_gguf_writer_create(&w), FG_OK);
  std::vector<const char *> strs;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (const Tok &t : toks) {
    strs.push_back(t.text.c_str());
    scores.push_back(t.score);
    types.push_back(t.type);
  }
  EXPECT_EQ(fg_gguf_writer_set_str(w, "general.architecture", "llama", 5), FG_OK);  // llama.cpp loads it so
  EXPECT_EQ(fg_gguf_writer_set_str(w, "tokenizer.ggml.model", model, strlen(model)), FG_OK);
  EXPECT_EQ(fg_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", strs.data(), nullptr, strs.size()), FG_OK);
  EXPECT_EQ(fg_gguf_writer_set_array(w, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, scores.data(), scores.size()), FG_OK);
  EXPECT_EQ(fg_gguf_writer_set_array(w, "tokenizer.ggml.token_type", FG_GGUF_INT32, types.data(), types.size()),
            FG_OK);
  extra(w);
  const std::string path = d.file(name);
  EXPECT_EQ(fg_gguf_writer_finish(w, path.c_str()), FG_OK) << fg_last_error();
  fg_gguf_writer_free(w);
  return path;
}

std::string ids_of(fg_tokenizer *t, const std::string &text, bool specials) {
  int32_t *ids = nullptr;
  size_t n = 0;
  if (fg_tokenizer_encode(t, text.data(), text.size(), specials, &ids, &n) != FG_OK) return "error: " + std::string(fg_last_error());
  std::string s;
  for (size_t i = 0; i < n; i++) s += (i ? " " : "") + std::to_string(ids[i]);
  fg_tokenizer_free_ids(ids);
  return s;
}

std::string text_of(fg_tokenizer *t, const std::vector<int32_t> &ids) {
  char *text = nullptr;
  size_t n = 0;
  if (fg_tokenizer_decode(t, ids.data(), ids.size(), &text, &n) != FG_OK) return "error";
  std::string s(text, n);
  fg_tokenizer_free_text(text);
  return s;
}

enum { N = FG_TOK_TYPE_NORMAL, C = FG_TOK_TYPE_CONTROL, U = FG_TOK_TYPE_UNKNOWN, D = FG_TOK_TYPE_USER_DEFINED,
       B = FG_TOK_TYPE_BYTE };

const std::vector<Tok> kUgm = {{"<pad>", 0, C},     {"</s>", 0, C},     {"<unk>", 0, U},     {"\xe2\x96\x81", -2, N},
                               {"\xe2\x96\x81" "a", -1, N}, {"a", -3, N}, {"b", -3, N}, {"\xe2\x96\x81" "ab", -1.5f, N},
                               {"y", -2.5f, N},    {"<mask>", 0, D}};

// A charsmap with one rule, "x" -> "y": the double array's root has base 1, so "x" (0x78)
// is node 0x79, a leaf (bit 8) labelled 0x78 with base 1, whose value node 0x78 holds the
// replacement's offset, 0.
std::vector<uint8_t> charsmap_x_to_y(uint32_t value = 0, bool terminated = true) {
  std::vector<uint32_t> nodes(0x80, 0);
  nodes[0] = 1u << 10;
  nodes[0x79] = (1u << 10) | (1u << 8) | 0x78;
  nodes[0x78] = value;
  std::vector<uint8_t> out(4);
  const uint32_t blob = (uint32_t)(nodes.size() * 4);
  memcpy(out.data(), &blob, 4);
  for (uint32_t v : nodes)
    for (int k = 0; k < 4; k++) out.push_back((uint8_t)(v >> (8 * k)));
  out.push_back('y');
  if (terminated) out.push_back(0);
  return out;
}

std::string ugm_vocab(const fgt::TempDir &d, const char *name, const std::vector<uint8_t> &cm) {
  return write_vocab(d, name, "t5", kUgm, [&](fg_gguf_writer *w) {
    EXPECT_EQ(fg_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 1), FG_OK);
    EXPECT_EQ(fg_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 2), FG_OK);
    EXPECT_EQ(fg_gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", true), FG_OK);
    EXPECT_EQ(fg_gguf_writer_set_bool(w, "tokenizer.ggml.remove_extra_whitespaces", true), FG_OK);
    EXPECT_EQ(fg_gguf_writer_set_array(w, "tokenizer.ggml.precompiled_charsmap", FG_GGUF_UINT8, cm.data(), cm.size()),
              FG_OK);
  });
}

TEST(LlamaKinds, UnigramNormalizesCutsByScoreAndAddsEos) {
  fgt::TempDir d;
  fg_tokenizer *t = nullptr;
  ASSERT_EQ(fg_tokenizer_open(ugm_vocab(d, "ugm.gguf", charsmap_x_to_y()).c_str(), &t), FG_OK) << fg_last_error();
  EXPECT_TRUE(fg_tokenizer_add_bos(t));  // the specials are on: add_eos_token's default
  EXPECT_EQ(ids_of(t, "ab", true), "7 1");               // ▁ab (-1.5) beats ▁a b (-4)
  EXPECT_EQ(ids_of(t, "ab", false), "7");
  EXPECT_EQ(ids_of(t, "  a   b ", false), "4 3 6");     // spaces collapse: ▁a ▁ b
  EXPECT_EQ(ids_of(t, "x", false), "3 8");               // the charsmap: x -> y
  EXPECT_EQ(ids_of(t, "zz", false), "3 2");              // two unknown characters, one <unk>
  EXPECT_EQ(ids_of(t, "a<mask>b", false), "4 9 3 6");    // every run between specials gets its ▁
  EXPECT_EQ(ids_of(t, "", true), "1");
  EXPECT_EQ(text_of(t, {4, 9, 3, 6, 1}), "a<mask> b</s>");  // the first token's space dropped
  fg_tokenizer_close(t);
}

TEST(LlamaKinds, DamagedCharsmapsAreErrorsNotReads) {
  fgt::TempDir d;
  fg_tokenizer *t = nullptr;
  // too short for its size header
  EXPECT_EQ(fg_tokenizer_open(ugm_vocab(d, "short.gguf", {1, 2, 3}).c_str(), &t), FG_ERR_INVALID_ARG);
  EXPECT_NE(std::string(fg_last_error()).find("size header"), std::string::npos) << fg_last_error();
  // a trie larger than the array
  EXPECT_EQ(fg_tokenizer_open(ugm_vocab(d, "big.gguf", {0xff, 0xff, 0, 0, 1, 2, 3, 4}).c_str(), &t),
            FG_ERR_INVALID_ARG);
  EXPECT_NE(std::string(fg_last_error()).find("precompiled_charsmap"), std::string::npos) << fg_last_error();
  // a leaf whose replacement lies outside the strings, and one with no NUL: the encode of a
  // text that reaches them fails, others still work
  for (auto cm : {charsmap_x_to_y(1000), charsmap_x_to_y(0, false)}) {
    ASSERT_EQ(fg_tokenizer_open(ugm_vocab(d, "bad.gguf", cm).c_str(), &t), FG_OK) << fg_last_error();
    EXPECT_EQ(ids_of(t, "ab", false), "7");
    const std::string r = ids_of(t, "ax", false);
    EXPECT_NE(r.find("points outside itself"), std::string::npos) << r;
    fg_tokenizer_close(t);
  }
}

TEST(LlamaKinds, Gemma4MergesCharactersAndSpellsUnknownBytes) {
  fgt::TempDir d;
  const std::vector<Tok> toks = {{"<pad>", 0, C}, {"<eos>", 0, C}, {"<bos>", 0, C},       {"<unk>", 0, U},
                                 {"<0xC3>", 0, B}, {"<0xA9>", 0, B}, {"a", 0, N},          {"b", 0, N},
                                 {"\xe2\x96\x81", 0, N}, {"\xe2\x96\x81" "a", 0, N}, {"ab", 0, N}, {"\n", 0, N},
                                 {"\n\n", 0, N}};
  const std::string path = write_vocab(d, "gemma4.gguf", "gemma4", toks, [](fg_gguf_writer *w) {
    const char *merges[] = {"\xe2\x96\x81 a", "a b"};
    EXPECT_EQ(fg_gguf_writer_set_str_array(w, "tokenizer.ggml.merges", merges, nullptr, 2), FG_OK);
    EXPECT_EQ(fg_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 2), FG_OK);
    EXPECT_EQ(fg_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 1), FG_OK);
    EXPECT_EQ(fg_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false), FG_OK);  // overridden
  });
  fg_tokenizer *t = nullptr;
  ASSERT_EQ(fg_tokenizer_open(path.c_str(), &t), FG_OK) << fg_last_error();
  EXPECT_TRUE(fg_tokenizer_add_bos(t));
  EXPECT_EQ(ids_of(t, " ab", true), "2 9 7");          // ▁ a merges first (rank 0), then no ▁a b
  EXPECT_EQ(ids_of(t, "ab\n\n\xc3\xa9", false), "10 12 4 5");  // é has no token: its bytes
  EXPECT_EQ(ids_of(t, "a\n\n\nb", false), "6 11 11 11 7");     // three newlines are no token: one each
  EXPECT_EQ(text_of(t, {2, 9, 7, 12, 4, 5}), "<bos> ab\n\n\xc3\xa9");
  fg_tokenizer_close(t);
}

TEST(LlamaKinds, DefaultPreTokenizerAndDetokenizerSpaceCleaning) {
  fgt::TempDir d;
  // GPT-2-mapped: "Ġ" is the space byte
  const std::vector<Tok> toks = {{"a", 0, N}, {"\xc4\xa0", 0, N}, {".", 0, N}, {"'", 0, N}, {"s", 0, N},
                                 {"\xc4\xa0" "a", 0, N}, {"t", 0, N}};
  const std::string path = write_vocab(d, "gpt2.gguf", "gpt2", toks, [](fg_gguf_writer *w) {
    const char *merges[] = {"\xc4\xa0 a"};
    EXPECT_EQ(fg_gguf_writer_set_str_array(w, "tokenizer.ggml.merges", merges, nullptr, 1), FG_OK);
  });
  fg_tokenizer *t = nullptr;
  ASSERT_EQ(fg_tokenizer_open(path.c_str(), &t), FG_OK) << fg_last_error();  // no tokenizer.ggml.pre
  EXPECT_EQ(ids_of(t, "a a.", false), "0 5 2");
  EXPECT_EQ(ids_of(t, "a\x01" "a", false), "0 0");  // a byte with no token is left out
  EXPECT_EQ(text_of(t, {0, 1, 2}), "a.");            // " ." loses its space
  EXPECT_EQ(text_of(t, {0, 1, 3, 1, 0}), "a'a");      // a lone ' loses both
  EXPECT_EQ(text_of(t, {0, 1, 3, 4}), "a's");         // " 's" loses its space
  EXPECT_EQ(text_of(t, {0, 1, 3, 6}), "a 't");        // " 't" keeps it
  fg_tokenizer_close(t);
}

}  // namespace

namespace {

// detokenize --file: one JSON string line per line of ids, escaped as llama_tok writes them
// (the form interop.tok_llama_goldens compares); usage mistakes exit 2, a bad line 1 naming it.
TEST(LlamaKinds, DetokenizeFileWritesOneJsonLinePerLine) {
  const std::string cli = FORGIA_CLI, vocab = FORGIA_SOURCE_DIR "/tests/data/tok/smollm2.gguf";
  fgt::TempDir d;
  const std::string ids = d.file("ids.txt");
  {
    FILE *f = fopen(ids.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("6403 1980 253 655\n\n1 198 2\n", f);  // a text, nothing, <|im_start|> \n <|im_end|>
    fclose(f);
  }
  std::string out, err;
  ASSERT_EQ(fgt::run(cli + " detokenize " + vocab + " --file " + ids, &out, &err), 0) << err;
  EXPECT_EQ(out, "\"Once upon a time\"\n\"\"\n\"<|im_start|>\\n<|im_end|>\"\n");
  ASSERT_EQ(fgt::run(cli + " detokenize " + vocab + " --file " + ids + " --skip-special", &out, &err), 0) << err;
  EXPECT_EQ(out, "\"Once upon a time\"\n\"\"\n\"\\n\"\n");
  EXPECT_EQ(fgt::run(cli + " detokenize " + vocab + " --file " + ids + " --file " + ids, &out, &err), 2);
  EXPECT_NE(err.find("given twice"), std::string::npos) << err;
  EXPECT_EQ(fgt::run(cli + " detokenize " + vocab + " --file " + ids + " 5", &out, &err), 2);
  EXPECT_EQ(fgt::run(cli + " detokenize " + vocab + " --file", &out, &err), 2);
  {
    FILE *f = fopen(ids.c_str(), "w");
    fputs("1 2\n3 x\n", f);
    fclose(f);
  }
  EXPECT_EQ(fgt::run(cli + " detokenize " + vocab + " --file " + ids, &out, &err), 1);
  EXPECT_NE(err.find("line 2"), std::string::npos) << err;
  EXPECT_EQ(fgt::run(cli + " detokenize " + vocab + " --file " + d.file("missing.txt"), &out, &err), 1);
  EXPECT_NE(err.find("missing.txt"), std::string::npos) << err;
}

}  // namespace
