// forgia/output.h: an output is refused when it is an input by identity (a link, a hard link,
// another spelling), lies inside an input folder, or (for a directory of outputs) holds an
// input; special files are refused; fg_output_write replaces a file whole. And a checkpoint
// save that fails before its sentinel goes (here: cancelled) leaves the previous checkpoint
// committed and unchanged.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "testutil.h"

namespace {

bool says(const char *what) { return std::string(fg_last_error()).find(what) != std::string::npos; }

TEST(Output, AnInputByAnyNameIsRefused) {
  fgt::TempDir d;
  const std::string in = d.file("in.bin"), out = d.file("out.bin");
  fgt::write_file(in, "data", 4);
  const char *inputs[] = {in.c_str(), nullptr};
  EXPECT_EQ(FG_OK, fg_output_check(out.c_str(), inputs, 2)) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check(in.c_str(), inputs, 2));
  EXPECT_TRUE(says("an input of this command")) << fg_last_error();
  ASSERT_EQ(0, symlink(in.c_str(), d.file("sym").c_str()));
  ASSERT_EQ(0, link(in.c_str(), d.file("hard").c_str()));
  ASSERT_EQ(0, mkdir(d.file("sub").c_str(), 0755));
  for (const std::string &alias : {d.file("sym"), d.file("hard"), d.path + "/./in.bin", d.file("sub/../in.bin")}) {
    EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check(alias.c_str(), inputs, 2)) << alias;
    EXPECT_TRUE(says("the same file as")) << fg_last_error();
  }
  // an input that does not exist protects nothing; NULL entries are skipped
  const char *gone[] = {d.file("absent").c_str()};
  EXPECT_EQ(FG_OK, fg_output_check(d.file("absent").c_str(), gone, 1)) << fg_last_error();
}

TEST(Output, InsideAnInputFolderIsRefused) {
  fgt::TempDir d;
  ASSERT_EQ(0, mkdir(d.file("hf").c_str(), 0755));
  ASSERT_EQ(0, mkdir(d.file("hf/deep").c_str(), 0755));
  const std::string folder = d.file("hf");
  const char *inputs[] = {folder.c_str()};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check(d.file("hf/x.gguf").c_str(), inputs, 1));
  EXPECT_TRUE(says("inside")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check(d.file("hf/deep/x.gguf").c_str(), inputs, 1));
  ASSERT_EQ(0, symlink(folder.c_str(), d.file("alias").c_str()));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check(d.file("alias/x.gguf").c_str(), inputs, 1));
  EXPECT_EQ(FG_OK, fg_output_check(d.file("x.gguf").c_str(), inputs, 1)) << fg_last_error();
}

TEST(Output, SpecialFilesAndMissingFoldersAreRefused) {
  fgt::TempDir d;
  ASSERT_EQ(0, mkfifo(d.file("fifo").c_str(), 0600));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check("/dev/null", nullptr, 0));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check(d.file("fifo").c_str(), nullptr, 0));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check(d.path.c_str(), nullptr, 0));
  EXPECT_EQ(FG_ERR_IO, fg_output_check(d.file("no/such/x").c_str(), nullptr, 0));
}

TEST(Output, DirectoriesOfOutputs) {
  fgt::TempDir d;
  const std::string ck = d.file("ck"), in = d.file("ck/model.safetensors"), other = d.file("other");
  fgt::write_file(d.file("file"), "x", 1);
  EXPECT_EQ(FG_OK, fg_output_check_dir(ck.c_str(), nullptr, 0)) << fg_last_error();  // absent: fine
  EXPECT_EQ(FG_OK, fg_output_check_dir(d.file("new/deeper/ck").c_str(), nullptr, 0)) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check_dir(d.file("file").c_str(), nullptr, 0));
  EXPECT_TRUE(says("a regular file")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check_dir("/dev/null", nullptr, 0));
  ASSERT_EQ(0, mkdir(ck.c_str(), 0755));
  fgt::write_file(in, "x", 1);
  const char *inputs[] = {in.c_str()};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check_dir(ck.c_str(), inputs, 1));  // holds an input
  EXPECT_TRUE(says("holds")) << fg_last_error();
  const char *dirs[] = {ck.c_str()};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check_dir(ck.c_str(), dirs, 1));  // is the input
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_check_dir(d.file("ck/sub").c_str(), dirs, 1));  // inside it
  EXPECT_TRUE(says("inside")) << fg_last_error();
  EXPECT_EQ(FG_OK, fg_output_check_dir(other.c_str(), dirs, 1)) << fg_last_error();
}

TEST(Output, WriteReplacesWhole) {
  fgt::TempDir d;
  const std::string p = d.file("f");
  fgt::write_file(p, "old contents", 12);
  ASSERT_EQ(0, chmod(p.c_str(), 0600));
  ASSERT_EQ(FG_OK, fg_output_write(p.c_str(), "new", 3)) << fg_last_error();
  const std::vector<uint8_t> b = fgt::read_file(p);
  EXPECT_EQ(std::string("new"), std::string(b.begin(), b.end()));
  struct stat st;
  ASSERT_EQ(0, stat(p.c_str(), &st));
  EXPECT_EQ(0600u, st.st_mode & 0777u);  // the mode is kept
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_output_write("/dev/null", "x", 1));
}

bool always(void *) { return true; }

TEST(Output, ACancelledCheckpointSaveKeepsThePreviousOne) {
  fgt::TempDir d;
  const std::string ck = d.file("ck");
  std::vector<float> w = fgt::gaussian(6, 1);
  const uint64_t shape[2] = {2, 3};
  fg_state_dict_entry e = {"w", FG_F32, 2, shape, w.data(), 24};
  fg_trainer_state ts;
  fg_trainer_state_init(&ts);
  ts.step = 7;
  const uint8_t opt[4] = {1, 2, 3, 4};
  ASSERT_EQ(FG_OK, fg_ckpt_dir_save(ck.c_str(), FG_CKPT_DIR_MODEL, &e, 1, opt, 4, &ts)) << fg_last_error();
  const std::string model = fgt::sha256_file(ck + "/model.safetensors");
  const std::string state = fgt::sha256_file(ck + "/trainer_state.json");
  w[0] += 1.0f;
  ts.step = 8;
  fg_cancel_set(always, nullptr);
  const fg_status s = fg_ckpt_dir_save(ck.c_str(), FG_CKPT_DIR_MODEL, &e, 1, opt, 4, &ts);
  fg_cancel_set(nullptr, nullptr);
  EXPECT_EQ(FG_ERR_STATE, s);
  fg_ckpt_dir *dir = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_dir_open(ck.c_str(), &dir)) << fg_last_error();
  EXPECT_EQ(7u, fg_ckpt_dir_trainer_state(dir)->step);
  fg_ckpt_dir_close(dir);
  EXPECT_EQ(model, fgt::sha256_file(ck + "/model.safetensors"));
  EXPECT_EQ(state, fgt::sha256_file(ck + "/trainer_state.json"));
  // and the next save goes through, leaving only the checkpoint's files
  ASSERT_EQ(FG_OK, fg_ckpt_dir_save(ck.c_str(), FG_CKPT_DIR_MODEL, &e, 1, opt, 4, &ts)) << fg_last_error();
  struct stat st;
  EXPECT_NE(0, stat((ck + "/.model.safetensors.next").c_str(), &st));
  EXPECT_NE(model, fgt::sha256_file(ck + "/model.safetensors"));
}

}  // namespace
