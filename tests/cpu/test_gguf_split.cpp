// Split GGUF files: NAME-0000k-of-0000N.gguf parts merged by fg_gguf_open_auto into one
// view (metadata of part 1, the union of tensors tagged with their part), the checks that
// the parts are one set (split keys, missing parts, duplicate tensors), and the refusal of
// a part opened alone, by its name or by its split keys when renamed.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "gguf_test_util.h"
#include "testutil.h"

using gg::Bytes;

namespace {

struct PartSpec {
  std::vector<std::string> tensors;
  int split_no = -1;     // -1: the part's index
  int split_count = -1;  // -1: n
  bool split_count_u32 = false;
  int tensors_count = -1;  // -1: the true total
  bool no_keys = false;    // a plain GGUF with no split.* keys
};

// Writes prefix-0000k-of-0000n.gguf like gguf-split: part 1 carries the model metadata,
// every part the split keys.
void write_split(const std::string &prefix, std::vector<PartSpec> parts) {
  int n = (int)parts.size(), total = 0;
  for (auto &p : parts) total += (int)p.tensors.size();
  int k = 0;
  for (size_t i = 0; i < parts.size(); i++) {
    PartSpec &p = parts[i];
    fg_gguf_writer *w = nullptr;
    ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
    if (i == 0) {
      ASSERT_EQ(fg_gguf_writer_set_str(w, "general.architecture", "llama", 5), FG_OK);
      ASSERT_EQ(fg_gguf_writer_set_u32(w, "general.alignment", 64), FG_OK);
    }
    if (!p.no_keys) {
      ASSERT_EQ(fg_gguf_writer_set_u16(w, "split.no", (uint16_t)(p.split_no < 0 ? (int)i : p.split_no)), FG_OK);
      if (p.split_count_u32)
        ASSERT_EQ(fg_gguf_writer_set_u32(w, "split.count", (uint32_t)n), FG_OK);
      else
        ASSERT_EQ(fg_gguf_writer_set_u16(w, "split.count", (uint16_t)(p.split_count < 0 ? n : p.split_count)), FG_OK);
      ASSERT_EQ(fg_gguf_writer_set_i32(w, "split.tensors.count", p.tensors_count < 0 ? total : p.tensors_count), FG_OK);
    }
    std::vector<Bytes> keep;
    for (auto &name : p.tensors) {
      keep.push_back(gg::pattern((uint64_t)k++ * 17, 20));
      uint64_t ne[2] = {5, 1};
      ASSERT_EQ(fg_gguf_writer_add_tensor(w, name.c_str(), FG_F32, 2, ne, keep.back().data(), 20), FG_OK);
    }
    char suffix[64];
    snprintf(suffix, sizeof suffix, "-%05zu-of-%05d.gguf", i + 1, n);
    ASSERT_EQ(fg_gguf_writer_finish(w, (prefix + suffix).c_str()), FG_OK) << fg_last_error();
    fg_gguf_writer_free(w);
  }
}

TEST(GgufSplit, NameRecognition) {
  uint32_t no = 0, count = 0;
  EXPECT_TRUE(fg_gguf_split_name("/m/model-00001-of-00003.gguf", &no, &count));
  EXPECT_EQ(no, 1u);
  EXPECT_EQ(count, 3u);
  EXPECT_TRUE(fg_gguf_split_name("x-00002-of-00002.gguf", &no, nullptr));
  EXPECT_EQ(no, 2u);
  EXPECT_FALSE(fg_gguf_split_name("model.gguf", nullptr, nullptr));
  EXPECT_FALSE(fg_gguf_split_name("model-0001-of-0003.gguf", nullptr, nullptr));
  EXPECT_FALSE(fg_gguf_split_name("model-00000-of-00003.gguf", nullptr, nullptr));
  EXPECT_FALSE(fg_gguf_split_name("model-00004-of-00003.gguf", nullptr, nullptr));
  EXPECT_FALSE(fg_gguf_split_name("model-00001-of-00003.gguf.part", nullptr, nullptr));
  EXPECT_FALSE(fg_gguf_split_name("model_00001-of-00003.gguf", nullptr, nullptr));
  EXPECT_FALSE(fg_gguf_split_name(nullptr, nullptr, nullptr));
}

TEST(GgufSplit, MergedView) {
  fgt::TempDir dir;
  std::string prefix = dir.file("model");
  write_split(prefix, {{{"a", "b"}}, {{}}, {{"c"}}, {{"d", "e"}}});
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_auto((prefix + "-00001-of-00004.gguf").c_str(), &f), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_gguf_part_count(f), 4u);
  EXPECT_EQ(fg_gguf_alignment(f), 64u);
  fg_gguf_str arch;
  ASSERT_EQ(fg_gguf_get_str(f, "general.architecture", &arch), FG_OK);
  EXPECT_EQ(gg::S(arch), "llama");
  EXPECT_EQ(fg_gguf_kv_count(f), 5u);  // part 1's metadata only
  ASSERT_EQ(fg_gguf_tensor_count(f), 5u);
  const char *names[] = {"a", "b", "c", "d", "e"};
  const uint32_t part[] = {0, 0, 2, 3, 3};
  for (uint64_t i = 0; i < 5; i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    EXPECT_STREQ(t->name, names[i]);
    EXPECT_EQ(t->part, part[i]);
    EXPECT_EQ(fg_gguf_find_tensor(f, names[i]), t);
    EXPECT_EQ(t->shape[0], 1u);
    EXPECT_EQ(t->shape[1], 5u);
    EXPECT_EQ(Bytes(t->data, t->data + t->nbytes), gg::pattern(i * 17, 20)) << names[i];
    // the pointer lies in its own part's mapping, at that part's data offset
    const fg_mapping *m = fg_gguf_mapping(f, t->part);
    EXPECT_EQ(t->data, fg_mapping_data(m) + fg_gguf_data_offset(f, t->part) + t->offset);
  }
  // parts 2..N have no general.alignment: their data sections use 32
  EXPECT_EQ(fg_gguf_data_offset(f, 2) % 32, 0u);
  EXPECT_EQ(fg_gguf_find_tensor(f, "e")->offset, 32u);
  EXPECT_EQ(fg_gguf_find_tensor(f, "b")->offset, 64u);
  fg_mapping *keep = fg_gguf_retain_mapping(f, 3);
  const uint8_t *e = fg_gguf_find_tensor(f, "e")->data;
  fg_gguf_close(f);
  EXPECT_EQ(Bytes(e, e + 20), gg::pattern(4 * 17, 20));
  fg_mapping_release(keep);

  // any other part parses on its own through fg_gguf_open (tools that inspect one part)
  ASSERT_EQ(fg_gguf_open((prefix + "-00003-of-00004.gguf").c_str(), FG_MAP_MMAP, &f), FG_OK);
  EXPECT_EQ(fg_gguf_part_count(f), 1u);
  EXPECT_EQ(fg_gguf_tensor_count(f), 1u);
  fg_gguf_close(f);
}

fg_status open_split(const std::string &prefix, int n) {
  char suffix[64];
  snprintf(suffix, sizeof suffix, "-00001-of-%05d.gguf", n);
  fg_gguf_file *f = nullptr;
  fg_status s = fg_gguf_open_auto((prefix + suffix).c_str(), &f);
  if (s != FG_OK) {
    EXPECT_EQ(f, nullptr);
  }
  fg_gguf_close(f);
  return s;
}

TEST(GgufSplit, Rejections) {
  fgt::TempDir dir;
  write_split(dir.file("dup"), {{{"a", "b"}}, {{"b"}}});
  EXPECT_EQ(open_split(dir.file("dup"), 2), FG_ERR_DUPLICATE);
  EXPECT_NE(std::string(fg_last_error()).find("'b'"), std::string::npos) << fg_last_error();

  write_split(dir.file("no"), {{{"a"}}, {{"b"}, 0}});
  EXPECT_EQ(open_split(dir.file("no"), 2), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("split.no"), std::string::npos) << fg_last_error();

  write_split(dir.file("count"), {{{"a"}, -1, 3}, {{"b"}}});
  EXPECT_EQ(open_split(dir.file("count"), 2), FG_ERR_RANGE);

  write_split(dir.file("type"), {{{"a"}, -1, -1, true}, {{"b"}}});
  EXPECT_EQ(open_split(dir.file("type"), 2), FG_ERR_TYPE);

  write_split(dir.file("total"), {{{"a"}, -1, -1, false, 5}, {{"b"}}});
  EXPECT_EQ(open_split(dir.file("total"), 2), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("split.tensors.count"), std::string::npos) << fg_last_error();

  write_split(dir.file("missing"), {{{"a"}}, {{"b"}}});
  std::remove((dir.file("missing") + "-00002-of-00002.gguf").c_str());
  EXPECT_EQ(open_split(dir.file("missing"), 2), FG_ERR_NOT_FOUND);
  EXPECT_NE(std::string(fg_last_error()).find("part 2 of 2"), std::string::npos) << fg_last_error();

  write_split(dir.file("bad"), {{{"a"}}, {{"b"}}});
  fgt::write_file(dir.file("bad") + "-00002-of-00002.gguf", "GGUF\x04\0\0\0", 8);
  EXPECT_EQ(open_split(dir.file("bad"), 2), FG_ERR_BAD_VERSION);
}

std::string err() { return fg_last_error(); }

bool has(const std::string &s, const std::string &sub) { return s.find(sub) != std::string::npos; }

fg_status open_auto(const std::string &path) {
  fg_gguf_file *f = nullptr;
  fg_status s = fg_gguf_open_auto(path.c_str(), &f);
  if (s != FG_OK) {
    EXPECT_EQ(f, nullptr);
  }
  fg_gguf_close(f);
  return s;
}

// The parts of one set must agree with each other in every key, not only with part 1.
TEST(GgufSplit, PartsMustBeOneSet) {
  fgt::TempDir dir;
  // part 2's split.count disagrees with the names (part 1's agrees)
  write_split(dir.file("count2"), {{{"a"}}, {{"b"}, -1, 3}});
  EXPECT_EQ(open_split(dir.file("count2"), 2), FG_ERR_RANGE);
  EXPECT_TRUE(has(err(), "count2-00002-of-00002.gguf: split.count is 3")) << err();

  // split.tensors.count is checked in every part (two models with two tensors in total each
  // give the same part-1 total; the second part's key gives the mix away)
  write_split(dir.file("total2"), {{{"a"}}, {{"b"}, -1, -1, false, 3}});
  EXPECT_EQ(open_split(dir.file("total2"), 2), FG_ERR_RANGE);
  EXPECT_TRUE(has(err(), "total2-00002-of-00002.gguf: split.tensors.count is 3 but the 2 parts hold 2")) << err();

  // a plain GGUF renamed into the set
  write_split(dir.file("plain"), {{{"a"}}, {{"b"}, -1, -1, false, -1, true}});
  EXPECT_EQ(open_split(dir.file("plain"), 2), FG_ERR_RANGE);
  EXPECT_TRUE(has(err(), "plain-00002-of-00002.gguf: no split.no")) << err();

  // part 3 of another 3-part set renamed as part 2
  fgt::TempDir other;
  write_split(dir.file("mix"), {{{"a"}}, {{"b"}}, {{"c"}}});
  write_split(other.file("mix"), {{{"x"}}, {{"y"}}, {{"z"}}});
  ASSERT_EQ(std::rename(other.file("mix-00003-of-00003.gguf").c_str(), dir.file("mix-00002-of-00003.gguf").c_str()), 0);
  EXPECT_EQ(open_split(dir.file("mix"), 3), FG_ERR_RANGE);
  EXPECT_TRUE(has(err(), "split.no is 2 (part 3), but its file name makes it part 2")) << err();

  // a file named as part 1 that is some set's part 2
  write_split(dir.file("swap"), {{{"a"}}, {{"b"}}});
  ASSERT_EQ(std::rename(dir.file("swap-00001-of-00002.gguf").c_str(), dir.file("tmp.gguf").c_str()), 0);
  ASSERT_EQ(std::rename(dir.file("swap-00002-of-00002.gguf").c_str(), dir.file("swap-00001-of-00002.gguf").c_str()), 0);
  ASSERT_EQ(std::rename(dir.file("tmp.gguf").c_str(), dir.file("swap-00002-of-00002.gguf").c_str()), 0);
  EXPECT_EQ(open_split(dir.file("swap"), 2), FG_ERR_RANGE);

  // a one-part split opens as itself
  write_split(dir.file("one"), {{{"a", "b"}}});
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_auto(dir.file("one-00001-of-00001.gguf").c_str(), &f), FG_OK) << err();
  EXPECT_EQ(fg_gguf_tensor_count(f), 2u);
  fg_gguf_close(f);
}

// A part alone: refused by fg_gguf_open_auto with what to open, parsed by fg_gguf_open.
TEST(GgufSplit, LonePartIsRefusedNamingPartOne) {
  fgt::TempDir dir;
  std::string prefix = dir.file("model");
  write_split(prefix, {{{"a"}}, {{"b"}}, {{"c"}}});
  std::string p2 = prefix + "-00002-of-00003.gguf";
  EXPECT_EQ(open_auto(p2), FG_ERR_INVALID_ARG);
  EXPECT_EQ(err(), p2 + ": part 2 of a 3-part split; open " + prefix + "-00001-of-00003.gguf, which opens every part");
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open(p2.c_str(), FG_MAP_MMAP, &f), FG_OK) << err();
  EXPECT_EQ(fg_gguf_tensor_count(f), 1u);
  fg_gguf_close(f);

  // renamed: the keys inside say what it is
  std::string r2 = dir.file("renamed.gguf"), r1 = dir.file("first.gguf");
  ASSERT_EQ(std::rename(p2.c_str(), r2.c_str()), 0);
  EXPECT_EQ(open_auto(r2), FG_ERR_INVALID_ARG);
  EXPECT_TRUE(has(err(), r2 + ": part 2 of a 3-part split (split.no 1); open part 1 of the set, named "
                               "NAME-00001-of-00003.gguf")) << err();
  ASSERT_EQ(std::rename((prefix + "-00001-of-00003.gguf").c_str(), r1.c_str()), 0);
  EXPECT_EQ(open_auto(r1), FG_ERR_INVALID_ARG);
  EXPECT_TRUE(has(err(), r1 + ": part 1 of a 3-part split (split.no 0, split.count 3), but its name does not end in "
                               "-00001-of-00003.gguf")) << err();

  // named as a part but the keys disagree: neither story is trusted
  write_split(dir.file("liar"), {{{"a"}}, {{"b"}, -1, 3}});
  EXPECT_EQ(open_auto(dir.file("liar-00002-of-00002.gguf")), FG_ERR_RANGE);
  EXPECT_TRUE(has(err(), "split.count is 3, but the file name says 2 parts")) << err();

  // named as a part without split keys: the name alone says it is a part
  write_split(dir.file("bare"), {{{"a"}, -1, -1, false, -1, true}, {{"b"}, -1, -1, false, -1, true}});
  EXPECT_EQ(open_auto(dir.file("bare-00002-of-00002.gguf")), FG_ERR_INVALID_ARG);
  EXPECT_TRUE(has(err(), "part 2 of a 2-part split; open " + dir.file("bare") + "-00001-of-00002.gguf")) << err();
  ASSERT_EQ(fg_gguf_open_auto(dir.file("bare-00001-of-00002.gguf").c_str(), &f), FG_OK) << err();
  EXPECT_EQ(fg_gguf_tensor_count(f), 2u);
  fg_gguf_close(f);
}

// Split keys that contradict themselves in a file opened alone.
TEST(GgufSplit, InconsistentKeysAlone) {
  fgt::TempDir dir;
  struct {
    const char *name;
    int no, count;
    fg_status want;
    const char *msg;
  } cases[] = {
      {"no_past_count.gguf", 3, 3, FG_ERR_RANGE, "split.no is 3 but split.count is 3"},
      {"count_zero.gguf", 0, 0, FG_ERR_RANGE, "split.count is 0"},
      {"single.gguf", 0, 1, FG_OK, ""},
  };
  for (auto &k : cases) {
    SCOPED_TRACE(k.name);
    fg_gguf_writer *w = nullptr;
    ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_u16(w, "split.no", (uint16_t)k.no), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_u16(w, "split.count", (uint16_t)k.count), FG_OK);
    ASSERT_EQ(fg_gguf_writer_finish(w, dir.file(k.name).c_str()), FG_OK) << err();
    fg_gguf_writer_free(w);
    EXPECT_EQ(open_auto(dir.file(k.name)), k.want) << err();
    if (k.want) {
      EXPECT_TRUE(has(err(), k.msg)) << err();
    }
  }
  // split.no without split.count still marks a later part
  fg_gguf_writer *w = nullptr;
  ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_u16(w, "split.no", 2), FG_OK);
  ASSERT_EQ(fg_gguf_writer_finish(w, dir.file("no_only.gguf").c_str()), FG_OK);
  fg_gguf_writer_free(w);
  EXPECT_EQ(open_auto(dir.file("no_only.gguf")), FG_ERR_INVALID_ARG);
  EXPECT_TRUE(has(err(), "part 3 of a split (split.no 2, no split.count)")) << err();
}

}  // namespace
