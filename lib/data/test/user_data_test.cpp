// Users' data (user_data.h): .npy arrays, token files and image folders, written here and
// read back sample by sample; each refusal names the file and the values.
#include <gtest/gtest.h>
#include <stb_image_write.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "burst/data/user_data.h"
#include "burst/util/error.h"

namespace burst::data {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/burst-user-data-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// A version 1.0 .npy file: its header padded to 64 bytes, then `data`.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data, bool fortran = false) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': (" + shape + "), }";
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  const uint16_t length = static_cast<uint16_t>(header.size());
  return std::string("\x93NUMPY\x01\x00", 8) + std::string(reinterpret_cast<const char*>(&length), 2) + header + data;
}

template <typename T>
std::string raw(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

std::string error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

const ModelSamples kImages2x2{{1, 2, 2}, 3, 0};

TEST(UserData, NpyUint8IsScaledAndLabelsRead) {
  TempDir dir;
  write_bytes(dir / "inputs.npy", npy("|u1", "2, 1, 2, 2", raw<uint8_t>({0, 255, 51, 102, 1, 2, 3, 4})));
  write_bytes(dir / "labels.npy", npy("<i8", "2,", raw<int64_t>({2, 0})));
  const Dataset dataset = load_npy_dataset(dir.path(), kImages2x2);
  EXPECT_EQ(dataset.num_samples(), 2);
  EXPECT_EQ(dataset.sample_shape(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_FALSE(dataset.tokens());
  std::vector<float> features(4);
  int64_t label = -1;
  dataset.read_sample(0, features.data(), &label);
  EXPECT_EQ(label, 2);
  EXPECT_EQ(features, (std::vector<float>{0.0f, 1.0f, 51 / 255.0f, 102 / 255.0f}));
  dataset.read_sample(1, features.data(), &label);
  EXPECT_EQ(label, 0);
  EXPECT_FLOAT_EQ(features[3], 4 / 255.0f);
}

TEST(UserData, NpyTokensWithPerTokenLabels) {
  TempDir dir;
  write_bytes(dir / "inputs.npy", npy("<i8", "2, 3", raw<int64_t>({1, 2, 3, 4, 5, 6})));
  write_bytes(dir / "labels.npy", npy("<i4", "2, 3", raw<int32_t>({2, 3, 4, 5, 6, 7})));
  const Dataset dataset = load_npy_dataset(dir.path(), {{3}, 8, 8});
  EXPECT_TRUE(dataset.tokens());
  EXPECT_EQ(dataset.labels_per_sample(), 3);
  std::vector<float> ids(3);
  std::vector<int64_t> labels(3);
  dataset.read_sample(1, ids.data(), labels.data());
  EXPECT_EQ(ids, (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(labels, (std::vector<int64_t>{5, 6, 7}));
}

TEST(UserData, NpyRefusals) {
  TempDir dir;
  const std::string labels = npy("<i8", "2,", raw<int64_t>({0, 1}));
  write_bytes(dir / "labels.npy", labels);
  EXPECT_NE(error_of([&] { load_npy_dataset(dir.path(), kImages2x2); }).find("cannot open"), std::string::npos);
  write_bytes(dir / "inputs.npy", npy("|u1", "2, 1, 2, 2", raw<uint8_t>({0, 1, 2, 3, 4, 5, 6})));
  EXPECT_NE(error_of([&] { load_npy_dataset(dir.path(), kImages2x2); }).find("holds 7 bytes"), std::string::npos);
  write_bytes(dir / "inputs.npy", npy("<f8", "2, 1, 2, 2", std::string(64, '\0')));
  EXPECT_NE(error_of([&] { load_npy_dataset(dir.path(), kImages2x2); }).find("holds <f8"), std::string::npos);
  write_bytes(dir / "inputs.npy", npy("|u1", "2, 1, 2, 2", std::string(8, '\0'), /*fortran=*/true));
  EXPECT_NE(error_of([&] { load_npy_dataset(dir.path(), kImages2x2); }).find("Fortran"), std::string::npos);
  write_bytes(dir / "inputs.npy", "not an array");
  EXPECT_NE(error_of([&] { load_npy_dataset(dir.path(), kImages2x2); }).find("not a .npy file"), std::string::npos);
  write_bytes(dir / "inputs.npy", npy("|u1", "2, 1, 2, 2", std::string(8, '\0')));
  write_bytes(dir / "labels.npy", npy("<i8", "2,", raw<int64_t>({0, 3})));
  EXPECT_NE(error_of([&] { load_npy_dataset(dir.path(), kImages2x2); }).find("label 3 at element 1"), std::string::npos);
  write_bytes(dir / "labels.npy", npy("<i8", "3,", raw<int64_t>({0, 1, 2})));
  EXPECT_NE(error_of([&] { load_npy_dataset(dir.path(), kImages2x2); }).find("has 2 samples"), std::string::npos);
}

TEST(UserData, TokenFileWindowsOverlapByTheirLabel) {
  TempDir dir;
  std::vector<uint16_t> ids(21);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>(i);
  write_bytes(dir / "train.bin", raw(ids));
  const Dataset dataset = load_token_dataset(dir / "train.bin", {{4}, 32, 32}, TokenWidth::uint16);
  EXPECT_EQ(dataset.num_samples(), 5);  // (21 - 1) / 4
  std::vector<float> features(4);
  std::vector<int64_t> labels(4);
  dataset.read_sample(1, features.data(), labels.data());  // tokens 4..8
  EXPECT_EQ(features, (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(labels, (std::vector<int64_t>{5, 6, 7, 8}));
  std::vector<uint32_t> wide{70000, 1, 2, 3, 4};
  write_bytes(dir / "wide.bin", raw(wide));
  const Dataset wide_set = load_token_dataset(dir / "wide.bin", {{4}, 100000, 100000}, TokenWidth::uint32);
  wide_set.read_sample(0, features.data(), labels.data());
  EXPECT_EQ(features[0], 70000.0f);
}

TEST(UserData, TokenFileRefusals) {
  TempDir dir;
  write_bytes(dir / "odd.bin", std::string(5, '\1'));
  EXPECT_NE(error_of([&] { load_token_dataset(dir / "odd.bin", {{2}, 300, 300}, TokenWidth::uint16); })
                .find("not a whole number of 2-byte tokens"),
            std::string::npos);
  write_bytes(dir / "big.bin", raw<uint16_t>({1, 2, 3, 40}));
  EXPECT_NE(error_of([&] { load_token_dataset(dir / "big.bin", {{2}, 32, 32}, TokenWidth::uint16); })
                .find("token 40 at position 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_token_dataset(dir / "big.bin", {{8}, 64, 64}, TokenWidth::uint16); })
                .find("holds 4 tokens"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_token_dataset(dir / "big.bin", {{1, 2, 2}, 64, 0}, TokenWidth::uint16); })
                .find("token ids"),
            std::string::npos);
}

void write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& grey) {
  fs::create_directories(fs::path(path).parent_path());
  ASSERT_NE(stbi_write_png(path.c_str(), width, height, 1, grey.data(), width), 0);
}

TEST(UserData, ImageFolderClassesCropAndNormalisation) {
  TempDir dir;
  write_png(dir / "ant/1.png", 2, 2, {0, 51, 102, 255});
  write_png(dir / "bee/a.png", 4, 2, {10, 20, 30, 40, 50, 60, 70, 80});  // 4 wide: the middle 2 columns kept
  write_bytes(dir / "bee/notes.txt", "skipped");
  const Dataset dataset = load_image_folder(dir.path(), kImages2x2, {{0.2}, {0.5}});
  ASSERT_EQ(dataset.num_samples(), 2);
  std::vector<float> features(4);
  int64_t label = -1;
  dataset.read_sample(0, features.data(), &label);
  EXPECT_EQ(label, 0);  // "ant" sorts first
  EXPECT_FLOAT_EQ(features[0], (0.0f - 0.2f) / 0.5f);
  EXPECT_FLOAT_EQ(features[3], (1.0f - 0.2f) / 0.5f);
  dataset.read_sample(1, features.data(), &label);
  EXPECT_EQ(label, 1);
  EXPECT_FLOAT_EQ(features[0], static_cast<float>((20 / 255.0 - 0.2) / 0.5));
  EXPECT_FLOAT_EQ(features[3], static_cast<float>((70 / 255.0 - 0.2) / 0.5));
}

TEST(UserData, ImageFolderRefusals) {
  TempDir dir;
  write_png(dir / "a/1.png", 2, 2, {0, 1, 2, 3});
  write_bytes(dir / "a/2.png", "not a png");
  EXPECT_NE(error_of([&] { load_image_folder(dir.path(), kImages2x2, {}); }).find("a/2.png' does not decode"),
            std::string::npos);
  fs::remove(dir / "a/2.png");
  for (const char* name : {"b", "c", "d"}) write_png(dir / (std::string(name) + "/1.png"), 2, 2, {0, 1, 2, 3});
  EXPECT_NE(error_of([&] { load_image_folder(dir.path(), kImages2x2, {}); }).find("4 class folders but the model has 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_image_folder(dir.path(), {{3}, 8, 8}, {}); }).find("[1 or 3, H, W]"), std::string::npos);
  EXPECT_NE(error_of([&] { load_image_folder(dir.path(), {{1, 2, 2}, 4, 0}, {{0.0}, {1.0, 2.0}}); }).find("--image-std has 2"),
            std::string::npos);
}

TEST(UserData, DatasetSpecs) {
  EXPECT_EQ(parse_dataset_spec("npy:/data/x").kind, "npy");
  EXPECT_EQ(parse_dataset_spec("tokens:a:b").path, "a:b");
  EXPECT_EQ(parse_dataset_spec("synthetic").kind, "synthetic");
  EXPECT_FALSE(is_user_dataset(parse_dataset_spec("fashion-mnist")));
  EXPECT_NE(error_of([] { parse_dataset_spec("images:"); }).find("names no path"), std::string::npos);
  EXPECT_NE(error_of([] { parse_dataset_spec("parquet:/x"); }).find("is not synthetic"), std::string::npos);
}

}  // namespace
}  // namespace burst::data
