// forgia finetune on a tiny model folder with a real tokenizer (the committed byte-level BPE
// fixture): the loss falls, a resumed run is the bytes of an uninterrupted one, the thread count
// changes no bit in exact mode, --steps 0 writes adapters that change nothing, the adapters
// serve through eval --adapters, chat data trains on the assistants' tokens only, and usage
// and data errors are reported before any work.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "lm_tiny.h"
#include "testutil.h"

namespace {

using fgt::TempDir;

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " " + args; }

struct TinyFolder {
  TempDir td;
  std::string dir;
  TinyFolder() {
    fgt::TinySpec s;
    s.V = 704;
    s.L = 2;
    const fgt::TinyModel m = fgt::tiny_make(s);
    dir = td.path + "/model";
    mkdir(dir.c_str(), 0755);
    EXPECT_EQ(FG_OK, fgt::tiny_write_hf(m, dir)) << fg_last_error();
    for (const char *f : {"tokenizer.json", "tokenizer_config.json"}) {
      const auto b = fgt::read_file(std::string(FORGIA_SOURCE_DIR) + "/tests/data/tok/gpt2/" + f);
      fgt::write_file(dir + "/" + f, b.data(), b.size());
    }
    const std::string text =
        "The quick brown fox jumps over the lazy dog.\nIt was 42 degrees, or so they said!\n"
        "A fixed answer: forty-two. Again, the quick brown fox jumps over the lazy dog.\n";
    fgt::write_file(file("text.txt"), text.data(), text.size());
  }
  std::string file(const std::string &n) const { return td.path + "/" + n; }
};

// The "loss" values of a metrics file, in order.
std::vector<double> losses(const std::string &path) {
  const auto b = fgt::read_file(path);
  std::stringstream ss(std::string(b.begin(), b.end()));
  std::vector<double> v;
  std::string line;
  while (std::getline(ss, line)) {
    const size_t a = line.find("\"loss\": ");
    EXPECT_NE(std::string::npos, a) << line;
    for (const char *k : {"\"step\": ", "\"tokens\": ", "\"lr\": ", "\"seconds\": "})
      EXPECT_NE(std::string::npos, line.find(k)) << line;
    if (a != std::string::npos) v.push_back(std::strtod(line.c_str() + a + 8, nullptr));
  }
  return v;
}

bool same_file(const std::string &a, const std::string &b) { return fgt::read_file(a) == fgt::read_file(b); }

TEST(FinetuneCli, LossFallsAndTheAdaptersServe) {
  TinyFolder f;
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli("finetune " + f.dir + " --data " + f.file("text.txt") +
                            " --ctx 16 --steps 40 --lr 0.02 --lora-rank 4 --batch 2 --mode exact --device cpu --save " +
                            f.file("run") + " --metrics " + f.file("m.jsonl") + " --quiet"),
                        &out, &err))
      << err;
  const auto l = losses(f.file("m.jsonl"));
  ASSERT_EQ(40u, l.size());
  EXPECT_LT(l.back(), 0.5 * l.front()) << "first " << l.front() << ", last " << l.back();
  EXPECT_NE(std::string::npos, out.find("steps 0..40")) << out;
  // eval --adapters reads alpha from the checkpoint's trainer_state.json: a lower NLL on the
  // text it learned.
  std::string base, tuned;
  const std::string ev = "eval " + f.dir + " --file " + f.file("text.txt") + " --mode exact --device cpu";
  ASSERT_EQ(0, fgt::run(cli(ev), &base, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli(ev + " --adapters " + f.file("run")), &tuned, &err)) << err;
  auto nll = [](const std::string &s) {
    const size_t a = s.find("nll ");
    return a == std::string::npos ? NAN : std::strtod(s.c_str() + a + 4, nullptr);
  };
  EXPECT_LT(nll(tuned), 0.5 * nll(base)) << base << tuned;
}

TEST(FinetuneCli, ResumeAndThreadsGiveTheSameBytes) {
  TinyFolder f;
  std::string out, err;
  const std::string common = "finetune " + f.dir + " --data " + f.file("text.txt") +
                             " --ctx 8 --lr 0.01 --lora-rank 2 --lora-dropout 0.1 --batch 2 --accum 2 --shuffle "
                             "--schedule cosine --warmup 2 --optim adamw --mode exact --device cpu --quiet";
  ASSERT_EQ(0, fgt::run(cli(common + " --steps 6 --save " + f.file("one") + " --threads 1"), &out, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli(common + " --steps 3 --save " + f.file("two") + " --threads 2"), &out, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli(common + " --steps 6 --resume " + f.file("two") + " --save " + f.file("two")), &out, &err))
      << err;
  for (const char *n : {"adapters.safetensors", "optimizer.fucina", "trainer_state.json"})
    EXPECT_TRUE(same_file(f.file("one/") + n, f.file("two/") + n)) << n;
  const auto ts = fgt::read_file(f.file("one/trainer_state.json"));
  const std::string s(ts.begin(), ts.end());
  for (const char *k : {"\"step\": 12", "\"data_seed\"", "\"data_epoch\"", "\"data_index\"", "\"lora_rank\": 2",
                        "\"accum_steps\": 2"})
    EXPECT_NE(std::string::npos, s.find(k)) << k << " in " << s;
  // A checkpoint past --steps is refused; a committed one is not replaced without --force.
  EXPECT_EQ(1, fgt::run(cli(common + " --steps 2 --resume " + f.file("one")), &out, &err));
  EXPECT_NE(std::string::npos, err.find("past --steps")) << err;
  EXPECT_EQ(2, fgt::run(cli(common + " --steps 1 --save " + f.file("one")), &out, &err));
}

TEST(FinetuneCli, StepsZeroWritesAdaptersThatChangeNothing) {
  TinyFolder f;
  std::string out, err, base, tuned;
  ASSERT_EQ(0, fgt::run(cli("finetune " + f.dir + " --data " + f.file("text.txt") + " --steps 0 --targets q,v,down "
                            "--save " + f.file("init") + " --quiet --device cpu"),
                        &out, &err))
      << err;
  fg_st_file *st = nullptr;
  ASSERT_EQ(FG_OK, fg_st_open(f.file("init/adapters.safetensors").c_str(), FG_MAP_READ, &st)) << fg_last_error();
  EXPECT_EQ(2u * 3u * 2u, fg_st_count(st));  // 2 layers x (q, v, down) x (A, B)
  fg_st_close(st);
  const std::string ev = "eval " + f.dir + " --file " + f.file("text.txt") + " --mode exact --device cpu --json";
  ASSERT_EQ(0, fgt::run(cli(ev), &base, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli(ev + " --adapters " + f.file("init")), &tuned, &err)) << err;
  EXPECT_EQ(base, tuned);
}

TEST(FinetuneCli, ChatDataTrainsOnTheAssistantsTokens) {
  TinyFolder f;
  const std::string rows =
      "{\"messages\": [{\"role\": \"user\", \"content\": \"What is six times seven?\"}, "
      "{\"role\": \"assistant\", \"content\": \"ANSWER: 42\"}]}\n"
      "\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi\"}, "
      "{\"role\": \"assistant\", \"content\": \"ANSWER: hello\"}, {\"role\": \"user\", \"content\": \"Bye\"}, "
      "{\"role\": \"assistant\", \"content\": \"ANSWER: bye\"}]}\n";
  fgt::write_file(f.file("chat.jsonl"), rows.data(), rows.size());
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli("finetune " + f.dir + " --data " + f.file("chat.jsonl") +
                            " --format chat --template smollm2 --steps 2 --device cpu"),
                        &out, &err))
      << err;
  // "2 sequences (T tokens, P targets)": the targets are the assistants' turns only.
  const size_t a = err.find("2 sequences (");
  ASSERT_NE(std::string::npos, a) << err;
  const double tokens = std::strtod(err.c_str() + a + 13, nullptr);
  const double targets = std::strtod(err.c_str() + err.find(", ", a + 13) + 2, nullptr);
  EXPECT_GT(targets, 6.0) << err;
  EXPECT_LT(targets, 0.6 * tokens) << err;
  // A line that is not JSON is named with its number.
  const std::string bad = rows + "{\"messages\": [\n";
  fgt::write_file(f.file("bad.jsonl"), bad.data(), bad.size());
  EXPECT_EQ(1, fgt::run(cli("finetune " + f.dir + " --data " + f.file("bad.jsonl") + " --format chat --template "
                            "smollm2 --steps 1 --device cpu"),
                        &out, &err));
  EXPECT_NE(std::string::npos, err.find("bad.jsonl:4")) << err;
  const std::string noasst = "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n";
  fgt::write_file(f.file("noasst.jsonl"), noasst.data(), noasst.size());
  EXPECT_EQ(1, fgt::run(cli("finetune " + f.dir + " --data " + f.file("noasst.jsonl") + " --format chat --template "
                            "smollm2 --steps 1 --device cpu"),
                        &out, &err));
  EXPECT_NE(std::string::npos, err.find("no assistant token")) << err;
}

TEST(FinetuneCli, JsonlTextsAndUsageErrors) {
  TinyFolder f;
  const std::string rows = "{\"text\": \"one small text\"}\n{\"text\": \"and another, a little longer\"}\n";
  fgt::write_file(f.file("t.jsonl"), rows.data(), rows.size());
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli("finetune " + f.dir + " --data " + f.file("t.jsonl") + " --format jsonl --epochs 2 "
                            "--batch 2 --device cpu"),
                        &out, &err))
      << err;
  EXPECT_NE(std::string::npos, out.find("steps 0..2")) << out;  // 2 sequences x 2 epochs / batch 2
  const std::string base = "finetune " + f.dir + " --data " + f.file("text.txt") + " ";
  struct Bad {
    const char *args, *what;
  } bad[] = {{"--targets q,x", "--targets"},       {"--steps 2 --epochs 1", "--epochs"},
             {"--save-every 2", "--save-every"},   {"--format csv", "--format"},
             {"--lora-dropout 1", "--lora-dropout"}, {"--lr 0", "--lr"},
             {"--warmup 3", "--warmup"},           {"--template chatml", "--template"},
             {"--ctx 1", "--ctx"},                 {"--batch 0", "--batch"}};
  for (const auto &b : bad) {
    EXPECT_EQ(2, fgt::run(cli(base + b.args), &out, &err)) << b.args;
    EXPECT_NE(std::string::npos, err.find(b.what)) << b.args << ": " << err;
  }
  EXPECT_EQ(2, fgt::run(cli("finetune " + f.dir), &out, &err));
  EXPECT_NE(std::string::npos, err.find("--data")) << err;
  EXPECT_EQ(1, fgt::run(cli(base + "--batch 100 --device cpu"), &out, &err));
  EXPECT_NE(std::string::npos, err.find("more than its")) << err;
}

// --full: every weight trains (f32 here); the loss falls, a resumed run on another thread count
// is the bytes of an uninterrupted one, the checkpoint's model.safetensors under the folder's
// own names makes, with its config and tokenizer, a folder forgia serves with the trained
// behaviour, and --freeze leaves kinds out.
TEST(FinetuneCli, FullFineTuningTrainsResumesAndServes) {
  TinyFolder f;
  std::string out, err;
  const std::string common = "finetune " + f.dir + " --data " + f.file("text.txt") +
                             " --full --ctx 8 --lr 0.01 --batch 2 --accum 2 --shuffle --optim adamw --clip 1 "
                             "--weight-decay 0.1 --mode exact --device cpu --quiet";
  ASSERT_EQ(0, fgt::run(cli(common + " --steps 8 --save " + f.file("one") + " --threads 1 --metrics " +
                            f.file("m.jsonl")), &out, &err))
      << err;
  const auto l = losses(f.file("m.jsonl"));
  ASSERT_EQ(8u, l.size());
  EXPECT_LT(l.back(), 0.5 * l.front()) << "first " << l.front() << ", last " << l.back();
  ASSERT_EQ(0, fgt::run(cli(common + " --steps 3 --save " + f.file("two") + " --threads 2"), &out, &err)) << err;
  // the checkpoint says it is --full: no flag needed to resume it
  ASSERT_EQ(0, fgt::run(cli("finetune " + f.dir + " --data " + f.file("text.txt") +
                            " --ctx 8 --lr 0.01 --batch 2 --shuffle --optim adamw --clip 1 --weight-decay 0.1 "
                            "--mode exact --device cpu --quiet --steps 8 --resume " + f.file("two") + " --save " +
                            f.file("two")), &out, &err))
      << err;
  for (const char *n : {"model.safetensors", "optimizer.fucina", "trainer_state.json"})
    EXPECT_TRUE(same_file(f.file("one/") + n, f.file("two/") + n)) << n;
  fg_st_file *st = nullptr;
  ASSERT_EQ(FG_OK, fg_st_open(f.file("one/model.safetensors").c_str(), FG_MAP_READ, &st)) << fg_last_error();
  EXPECT_EQ(2u + 2u * 9u, fg_st_count(st));  // embedding, final norm; per layer 2 norms + 7 projections
  EXPECT_NE(nullptr, fg_st_find(st, "model.layers.1.mlp.down_proj.weight"));
  fg_st_close(st);
  // The checkpoint folder plus the model's config and tokenizer is a model folder.
  for (const char *n : {"config.json", "tokenizer.json", "tokenizer_config.json"}) {
    const auto b = fgt::read_file(f.dir + "/" + n);
    fgt::write_file(f.file("one/") + n, b.data(), b.size());
  }
  std::string base, tuned;
  const std::string ev = " --file " + f.file("text.txt") + " --ctx 64 --mode exact --device cpu --json";
  ASSERT_EQ(0, fgt::run(cli("eval " + f.dir + ev), &base, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli("eval " + f.file("one") + ev), &tuned, &err)) << err;
  const auto ppl = [](const std::string &j) { return std::strtod(j.c_str() + j.find("\"ppl\": ") + 7, nullptr); };
  EXPECT_LT(ppl(tuned), 0.1 * ppl(base)) << tuned << "\n" << base;
  // --freeze: the frozen kinds are not in the checkpoint.
  ASSERT_EQ(0, fgt::run(cli(common + " --steps 1 --freeze token_embd,norms --save " + f.file("fz")), &out, &err)) << err;
  ASSERT_EQ(FG_OK, fg_st_open(f.file("fz/model.safetensors").c_str(), FG_MAP_READ, &st)) << fg_last_error();
  EXPECT_EQ(2u * 7u, fg_st_count(st));
  EXPECT_EQ(nullptr, fg_st_find(st, "model.embed_tokens.weight"));
  fg_st_close(st);
  // Usage: --full is not LoRA; --freeze needs --full and known kinds.
  const std::string b0 = "finetune " + f.dir + " --data " + f.file("text.txt") + " ";
  struct Bad {
    const char *args, *what;
  } bad[] = {{"--full --lora-rank 4", "--full"}, {"--freeze norms", "--freeze"},
             {"--full --freeze attn_x", "--freeze"}, {"--full --freeze norms,", "--freeze"},
             {"--weight-decay -1", "--weight-decay"}};
  for (const auto &b : bad) {
    EXPECT_EQ(2, fgt::run(cli(b0 + b.args), &out, &err)) << b.args;
    EXPECT_NE(std::string::npos, err.find(b.what)) << b.args << ": " << err;
  }
  // A LoRA checkpoint does not resume as --full.
  ASSERT_EQ(0, fgt::run(cli(b0 + "--steps 1 --ctx 8 --device cpu --quiet --save " + f.file("lora")), &out, &err)) << err;
  EXPECT_EQ(1, fgt::run(cli(b0 + "--full --steps 2 --ctx 8 --device cpu --quiet --resume " + f.file("lora")), &out, &err));
  EXPECT_NE(std::string::npos, err.find("model.safetensors")) << err;
}

TEST(EsFinetuneCli, ResumeIsExactAndRewardsAreReported) {
  TinyFolder f;
  std::string out, err;
  const std::string common = "es-finetune " + f.dir + " --data " + f.file("text.txt") +
                             " --ctx 8 --population 6 --antithetic --sigma 0.05 --batch 2 --shuffle --lora-rank 2 "
                             "--gemm exact --device cpu --quiet";
  ASSERT_EQ(0, fgt::run(cli(common + " --iterations 4 --save " + f.file("one") + " --metrics " + f.file("m.jsonl")), &out,
                        &err))
      << err;
  EXPECT_NE(std::string::npos, out.find("iterations 0..4")) << out;
  const auto m = fgt::read_file(f.file("m.jsonl"));
  const std::string ms(m.begin(), m.end());
  EXPECT_EQ(4, std::count(ms.begin(), ms.end(), '\n')) << ms;
  EXPECT_NE(std::string::npos, ms.find("\"reward_mean\": -")) << ms;  // minus a mean NLL
  ASSERT_EQ(0, fgt::run(cli(common + " --iterations 2 --save " + f.file("two") + " --threads 2"), &out, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli(common + " --iterations 4 --resume " + f.file("two") + " --save " + f.file("two")), &out,
                        &err))
      << err;
  for (const char *n : {"adapters.safetensors", "trainer_state.json"})
    EXPECT_TRUE(same_file(f.file("one/") + n, f.file("two/") + n)) << n;
  // The accuracy reward: fractions in [0, 1].
  ASSERT_EQ(0, fgt::run(cli(common + " --iterations 1 --reward acc --metrics " + f.file("acc.jsonl")), &out, &err))
      << err;
  const auto a = fgt::read_file(f.file("acc.jsonl"));
  const std::string as(a.begin(), a.end());
  const double mean = std::strtod(as.c_str() + as.find("reward_mean\": ") + 14, nullptr);
  EXPECT_GE(mean, 0.0);
  EXPECT_LE(mean, 1.0);
  EXPECT_EQ(2, fgt::run(cli(common + " --reward bleu"), &out, &err));
  EXPECT_EQ(2, fgt::run(cli(common + " --mode half"), &out, &err));
  EXPECT_EQ(2, fgt::run(cli(common + " --mode full --lora-rank 2"), &out, &err));
  EXPECT_EQ(2, fgt::run(cli(common + " --max-new 4"), &out, &err));  // goes with --reward rule
  EXPECT_EQ(2, fgt::run(cli("es-finetune " + f.dir + " --data x --population 5 --antithetic"), &out, &err));
}

// es-finetune --mode full evolves every weight: a resumed run on another thread count is the
// bytes of an uninterrupted one, saved as model.safetensors.
TEST(EsFinetuneCli, FullModeResumesExactly) {
  TinyFolder f;
  std::string out, err;
  const std::string common = "es-finetune " + f.dir + " --data " + f.file("text.txt") +
                             " --mode full --ctx 8 --batch 2 --population 4 --sigma 0.05 --gemm exact --device cpu "
                             "--quiet";
  ASSERT_EQ(0, fgt::run(cli(common + " --iterations 3 --save " + f.file("one") + " --threads 1"), &out, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli(common + " --iterations 1 --save " + f.file("two") + " --threads 2"), &out, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli("es-finetune " + f.dir + " --data " + f.file("text.txt") +
                            " --ctx 8 --batch 2 --population 4 --sigma 0.05 --gemm exact --device cpu --quiet "
                            "--iterations 3 --resume " + f.file("two") + " --save " + f.file("two")), &out, &err))
      << err;
  for (const char *n : {"model.safetensors", "trainer_state.json"})
    EXPECT_TRUE(same_file(f.file("one/") + n, f.file("two/") + n)) << n;
  // the weights moved: the checkpoint is not the model's own
  fg_st_file *a = nullptr, *b = nullptr;
  ASSERT_EQ(FG_OK, fg_st_open(f.file("one/model.safetensors").c_str(), FG_MAP_READ, &a)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_st_open((f.dir + "/model.safetensors").c_str(), FG_MAP_READ, &b)) << fg_last_error();
  const fg_st_tensor *ta = fg_st_find(a, "model.layers.0.mlp.up_proj.weight"), *tb = fg_st_find(b, "model.layers.0.mlp.up_proj.weight");
  ASSERT_TRUE(ta && tb);
  EXPECT_EQ(ta->nbytes, tb->nbytes);
  const auto fa = fgt::read_file(f.file("one/model.safetensors")), fb = fgt::read_file(f.dir + "/model.safetensors");
  EXPECT_NE(0, memcmp(fa.data() + fg_st_data_start(a) + ta->begin, fb.data() + fg_st_data_start(b) + tb->begin,
                      ta->nbytes));
  fg_st_close(a);
  fg_st_close(b);
}

// The rule and accuracy rewards on a model that has learned one sentence by heart (finetune
// --full): greedy generation from its first token gives the sentence, so the unigram F1 is 1,
// plus 0.1 when the format envelope holds; the accuracy reward is 1 + 0.1 exp(-NLL).
TEST(EsFinetuneCli, RuleAndAccuracyRewardsOnAMemorizedText) {
  TinyFolder f;
  std::string out, err;
  const std::string fox = "The quick brown fox jumps over the lazy dog.";
  fgt::write_file(f.file("fox.txt"), fox.data(), fox.size());
  ASSERT_EQ(0, fgt::run(cli("finetune " + f.dir + " --data " + f.file("fox.txt") + " --full --ctx 64 --steps 30 "
                            "--lr 0.01 --mode exact --device cpu --quiet --save " + f.file("m")), &out, &err))
      << err;
  for (const char *n : {"config.json", "tokenizer.json", "tokenizer_config.json"}) {
    const auto b = fgt::read_file(f.dir + "/" + n);
    fgt::write_file(f.file("m/") + n, b.data(), b.size());
  }
  std::string ids;
  ASSERT_EQ(0, fgt::run(cli("tokenize " + f.file("m") + " --file " + f.file("fox.txt")), &ids, &err)) << err;
  const size_t n_tok = (size_t)std::count(ids.begin(), ids.end(), ' ') + 1;
  const auto reward = [&](const std::string &extra) {
    std::string o, e;
    const std::string mj = f.file("r.jsonl");
    EXPECT_EQ(0, fgt::run(cli("es-finetune " + f.file("m") + " --data " + f.file("fox.txt") + " --ctx 64 "
                              "--population 2 --sigma 1e-6 --iterations 1 --gemm exact --device cpu --quiet "
                              "--metrics " + mj + " " + extra), &o, &e))
        << e;
    const auto b = fgt::read_file(mj);
    const std::string s(b.begin(), b.end());
    return std::strtod(s.c_str() + s.find("reward_mean\": ") + 14, nullptr);
  };
  const std::string gen = "--reward rule --max-new " + std::to_string(n_tok - 1);
  EXPECT_NEAR(1.0, reward(gen), 1e-6);
  EXPECT_NEAR(1.1, reward(gen + " --format-prefix he --format-suffix dog."), 1e-6);  // after the first token "T"
  EXPECT_NEAR(1.0, reward(gen + " --format-prefix quick"), 1e-6);
  // generating past the sentence: 9 words of the 9 + 4 generated -> F1 2 * 9 / (9 + 13)
  const double longer = reward("--reward rule --max-new " + std::to_string(n_tok + 12));
  EXPECT_LT(longer, 1.0);
  EXPECT_GT(longer, 0.5);
  const double acc = reward("--reward acc");
  EXPECT_GT(acc, 1.09);
  EXPECT_LE(acc, 1.1);
}

}  // namespace
