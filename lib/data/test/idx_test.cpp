// IDX files written by the test (gzip through zlib, and plain), read back; malformed ones
// refused with the path and the reason.
#include "burst/data/idx.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>

#include "burst/util/error.h"

namespace burst::data {
namespace {

using Bytes = std::vector<uint8_t>;

// An IDX file: magic 00 00 <type> <dims>, big-endian uint32 sizes, then the payload.
Bytes idx_bytes(const std::vector<uint32_t>& dims, const Bytes& payload, uint8_t type = 0x08) {
  Bytes bytes = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (const uint32_t extent : dims) {
    for (const int shift : {24, 16, 8, 0}) bytes.push_back(static_cast<uint8_t>(extent >> shift));
  }
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  return bytes;
}

// A fresh path in the test's temporary directory (unique per process and name).
std::string temp_path(const std::string& name) {
  return fmt::format("{}burst_idx_test_{}_{}", ::testing::TempDir(), getpid(), name);
}

Bytes gzip(const Bytes& bytes) {
  const std::string path = temp_path("gzip_scratch.gz");
  gzFile file = gzopen(path.c_str(), "wb");
  EXPECT_NE(file, nullptr);
  EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  EXPECT_EQ(gzclose(file), Z_OK);
  std::ifstream in(path, std::ios::binary);
  Bytes compressed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  return compressed;
}

std::string read_error(const std::string& path) {
  try {
    read_idx_file(path);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

std::string load_error(const std::string& images, const std::string& labels) {
  try {
    load_idx_dataset("test", images, labels, 10);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

// 3 images of 2x2 pixels and their labels.
const Bytes kPixels = {0, 255, 51, 102, 1, 2, 3, 4, 255, 255, 0, 0};
const Bytes kLabels = {7, 0, 9};

// Writes the test's files and removes them when the test ends.
class IdxFile : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& path : written_) std::remove(path.c_str());
  }

  std::string write_file(const std::string& name, const Bytes& bytes) {
    const std::string path = temp_path(name);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    written_.push_back(path);
    return path;
  }

 private:
  std::vector<std::string> written_;
};

TEST_F(IdxFile, ReadsGzipCompressedFiles) {
  const std::string path = write_file("ok.gz", gzip(idx_bytes({3, 2, 2}, kPixels)));
  const IdxArray array = read_idx_file(path);
  EXPECT_EQ(array.dims, (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(array.bytes, kPixels);
}

TEST_F(IdxFile, ReadsPlainFiles) {
  const std::string path = write_file("plain", idx_bytes({3}, kLabels));
  const IdxArray array = read_idx_file(path);
  EXPECT_EQ(array.dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(array.bytes, kLabels);
}

TEST_F(IdxFile, LoadsImagesAndLabelsAsADataset) {
  const std::string images = write_file("images.gz", gzip(idx_bytes({3, 2, 2}, kPixels)));
  const std::string labels = write_file("labels.gz", gzip(idx_bytes({3}, kLabels)));
  const Dataset dataset = load_idx_dataset("tiny", images, labels, 10);
  EXPECT_EQ(dataset.name(), "tiny");
  EXPECT_EQ(dataset.num_samples(), 3);
  EXPECT_EQ(dataset.sample_shape(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(dataset.num_classes(), 10);
  EXPECT_EQ(dataset.labels(), (std::vector<int64_t>{7, 0, 9}));
  // byte / 255: 0 -> 0, 255 -> 1, 51 -> 0.2, 102 -> 0.4.
  EXPECT_EQ(dataset.sample_features(0)[0], 0.0f);
  EXPECT_EQ(dataset.sample_features(0)[1], 1.0f);
  EXPECT_FLOAT_EQ(dataset.sample_features(0)[2], 0.2f);
  EXPECT_FLOAT_EQ(dataset.sample_features(0)[3], 0.4f);
  EXPECT_FLOAT_EQ(dataset.sample_features(1)[3], 4.0f / 255.0f);
  EXPECT_EQ(dataset.sample_features(2)[0], 1.0f);
}

TEST_F(IdxFile, RefusesAMissingFile) {
  const std::string path = temp_path("does-not-exist.gz");
  const std::string error = read_error(path);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("cannot open: No such file or directory"), std::string::npos) << error;
}

TEST_F(IdxFile, RefusesTruncatedData) {
  // Declares 3x2x2 = 12 bytes but holds 10.
  const Bytes cut(kPixels.begin(), kPixels.end() - 2);
  const std::string path = write_file("short.gz", gzip(idx_bytes({3, 2, 2}, cut)));
  const std::string error = read_error(path);
  EXPECT_NE(error.find("IDX file '" + path + "': truncated"), std::string::npos) << error;
  EXPECT_NE(error.find("expected 12 bytes of data for sizes [3, 2, 2], found 10"),
            std::string::npos)
      << error;
  // Cut inside the header.
  EXPECT_NE(read_error(write_file("header.gz", gzip({0, 0, 8})))
                .find("truncated: expected 4 bytes of magic number, found 3"),
            std::string::npos);
  EXPECT_NE(read_error(write_file("dims.gz", gzip({0, 0, 8, 2, 0, 0, 0, 3})))
                .find("truncated: expected 8 bytes of dimension sizes, found 4"),
            std::string::npos);
}

TEST_F(IdxFile, RefusesACutGzipStream) {
  // The compressed bytes end half way: zlib reports an unexpected end of file.
  const Bytes compressed = gzip(idx_bytes({3, 2, 2}, kPixels));
  const std::string path =
      write_file("cut.gz", Bytes(compressed.begin(), compressed.begin() + compressed.size() / 2));
  const std::string error = read_error(path);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

TEST_F(IdxFile, RefusesACorruptGzipStream) {
  // The gzip trailer ends with CRC-32 and length; a wrong CRC is found at the end.
  Bytes compressed = gzip(idx_bytes({3, 2, 2}, kPixels));
  compressed[compressed.size() - 8] ^= 0xff;
  const std::string error = read_error(write_file("crc.gz", compressed));
  EXPECT_NE(error.find("cannot decompress: incorrect data check"), std::string::npos) << error;
}

TEST_F(IdxFile, RefusesBadHeaders) {
  Bytes bad_magic = idx_bytes({3}, kLabels);
  bad_magic[0] = 1;
  bad_magic[1] = 2;
  EXPECT_NE(read_error(write_file("magic.gz", gzip(bad_magic))).find("bad magic number 0x01020801"),
            std::string::npos);
  // 0x0d is IDX's float type: valid IDX, but not what image and label files hold.
  EXPECT_NE(read_error(write_file("float.gz", gzip(idx_bytes({1}, {0, 0, 0, 0}, 0x0d))))
                .find("element type 0x0d is not supported"),
            std::string::npos);
  EXPECT_NE(
      read_error(write_file("rank0.gz", gzip(idx_bytes({}, {})))).find("0 dimensions declared"),
      std::string::npos);
  EXPECT_NE(read_error(write_file("rank5.gz", gzip(idx_bytes({1, 1, 1, 1, 1}, {7}))))
                .find("5 dimensions declared, expected 1 to 4"),
            std::string::npos);
  EXPECT_NE(
      read_error(write_file("zero.gz", gzip(idx_bytes({3, 0}, {})))).find("dimension 1 has size 0"),
      std::string::npos);
}

TEST_F(IdxFile, RefusesSizesOverTheLimitBeforeAllocating) {
  // 65535^3 bytes (~2.8e14) would overflow memory; refused from the header alone.
  const std::string error =
      read_error(write_file("huge.gz", gzip(idx_bytes({65535, 65535, 65535}, {}))));
  EXPECT_NE(error.find("sizes [65535, 65535] declare more than the limit"), std::string::npos)
      << error;
}

TEST_F(IdxFile, RefusesTrailingBytes) {
  Bytes payload = kLabels;
  payload.push_back(1);
  const std::string error = read_error(write_file("trailing.gz", gzip(idx_bytes({3}, payload))));
  EXPECT_NE(error.find("trailing bytes after the 3 bytes of data that sizes [3] declare"),
            std::string::npos)
      << error;
}

TEST_F(IdxFile, RefusesMismatchedImageAndLabelFiles) {
  const std::string images = write_file("m_images.gz", gzip(idx_bytes({3, 2, 2}, kPixels)));
  const std::string two_labels = write_file("m_labels.gz", gzip(idx_bytes({2}, {1, 2})));
  EXPECT_NE(load_error(images, two_labels).find("do not match: 3 images but 2 labels"),
            std::string::npos);
  const std::string big_label = write_file("m_big.gz", gzip(idx_bytes({3}, {1, 10, 2})));
  EXPECT_NE(load_error(images, big_label).find("label #1 is 10, expected 0 to 9"),
            std::string::npos);
  // Images and labels swapped.
  const std::string labels = write_file("m_ok.gz", gzip(idx_bytes({3}, kLabels)));
  EXPECT_NE(load_error(labels, images).find("an image file has 3 dimensions"), std::string::npos);
  EXPECT_NE(load_error(images, images).find("a label file has 1 dimension"), std::string::npos);
}

}  // namespace
}  // namespace burst::data
