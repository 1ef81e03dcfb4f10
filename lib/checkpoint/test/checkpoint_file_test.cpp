// Checkpoint files: round trips, and every kind of damage refused with its reason.
#include "burst/checkpoint/checkpoint_file.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "burst/graph/model_json.h"
#include "burst/util/error.h"

namespace burst::checkpoint {
namespace {

std::string float_bytes(std::initializer_list<float> values) {
  std::string bytes;
  for (const float value : values) bytes.append(reinterpret_cast<const char*>(&value), sizeof(value));
  return bytes;
}

Checkpoint sample_checkpoint() {
  Checkpoint checkpoint;
  checkpoint.model = "tiny";
  checkpoint.model_fingerprint = "0123456789abcdef";
  checkpoint.step = 120;
  checkpoint.state = {{"sampler", {{"seed", 7}}}, {"optimizer", "sgd"}};
  checkpoint.tensors.push_back({"a.weight", "float32", {2, 2}, float_bytes({1, 2, 3, 4})});
  checkpoint.tensors.push_back({"a.bias", "float32", {2}, float_bytes({0.5f, -0.5f})});
  checkpoint.tensors.push_back({"steps", "int64", {}, std::string(8, '\0')});
  return checkpoint;
}

// The reason decode_checkpoint gives for `bytes`, or "" if it accepts them.
std::string refusal(const std::string& bytes) {
  try {
    decode_checkpoint(bytes);
  } catch (const UserError& error) {
    return error.what();
  }
  return "";
}

class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    path_ = std::filesystem::temp_directory_path() / fmt::format("burst-checkpoint-test-{}", ::getpid());
    std::filesystem::create_directories(path_);
  }
  ~TemporaryDirectory() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST(CheckpointFile, RoundTripsEveryField) {
  const Checkpoint original = sample_checkpoint();
  const Checkpoint decoded = decode_checkpoint(encode_checkpoint(original));
  EXPECT_EQ(decoded.model, "tiny");
  EXPECT_EQ(decoded.model_fingerprint, "0123456789abcdef");
  EXPECT_EQ(decoded.step, 120);
  EXPECT_EQ(decoded.state, original.state);
  ASSERT_EQ(decoded.tensors.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(decoded.tensors[i].name, original.tensors[i].name);
    EXPECT_EQ(decoded.tensors[i].dtype, original.tensors[i].dtype);
    EXPECT_EQ(decoded.tensors[i].shape, original.tensors[i].shape);
    EXPECT_EQ(decoded.tensors[i].bytes, original.tensors[i].bytes);
  }
}

// Cut at every length short of the whole: each is refused, none crashes.
TEST(CheckpointFile, RefusesEveryTruncation) {
  const std::string bytes = encode_checkpoint(sample_checkpoint());
  for (size_t length = 0; length < bytes.size(); ++length) {
    const std::string reason = refusal(bytes.substr(0, length));
    EXPECT_FALSE(reason.empty()) << "accepted " << length << " of " << bytes.size() << " bytes";
  }
  EXPECT_NE(refusal(bytes.substr(0, bytes.size() - 1)).find("truncated"), std::string::npos);
  EXPECT_NE(refusal(bytes + "x").find("corrupt"), std::string::npos);
}

// Flip every bit of the file, one at a time: each is refused.
TEST(CheckpointFile, RefusesEveryFlippedBit) {
  const std::string bytes = encode_checkpoint(sample_checkpoint());
  for (size_t at = 0; at < bytes.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = bytes;
      damaged[at] = static_cast<char>(damaged[at] ^ (1 << bit));
      EXPECT_FALSE(refusal(damaged).empty()) << "accepted a flipped bit " << bit << " of byte " << at;
    }
  }
}

TEST(CheckpointFile, RefusesOtherFilesAndVersions) {
  EXPECT_NE(refusal(std::string(64, 'x')).find("not a burst checkpoint"), std::string::npos);
  std::string bytes = encode_checkpoint(sample_checkpoint());
  bytes[8] = 2;  // the format version, little-endian
  EXPECT_NE(refusal(bytes).find("format version 2; this burst reads version 1"), std::string::npos);
}

TEST(CheckpointFile, RefusesInconsistentTensors) {
  Checkpoint checkpoint = sample_checkpoint();
  checkpoint.tensors[0].bytes.pop_back();
  EXPECT_THROW(encode_checkpoint(checkpoint), UserError);
  checkpoint = sample_checkpoint();
  checkpoint.tensors[1].name = "a.weight";
  EXPECT_THROW(encode_checkpoint(checkpoint), UserError);
  checkpoint = sample_checkpoint();
  checkpoint.tensors[0].dtype = "bfloat16";
  EXPECT_THROW(encode_checkpoint(checkpoint), UserError);
}

TEST(CheckpointFile, FingerprintsTellModelsApart) {
  const graph::Graph vgg = graph::load_model("vgg11");
  EXPECT_EQ(model_fingerprint(vgg), model_fingerprint(graph::load_model("vgg11")));
  EXPECT_NE(model_fingerprint(vgg), model_fingerprint(graph::load_model("vgg11:classes=10")));
  EXPECT_EQ(model_fingerprint(vgg).size(), 16u);
  Checkpoint checkpoint = sample_checkpoint();
  checkpoint.model = vgg.name();
  checkpoint.model_fingerprint = model_fingerprint(vgg);
  EXPECT_NO_THROW(check_checkpoint_model(checkpoint, vgg, "c.ckpt"));
  try {
    check_checkpoint_model(checkpoint, graph::load_model("vgg13"), "c.ckpt");
    ADD_FAILURE() << "a checkpoint of vgg11 accepted for vgg13";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("is for model vgg11"), std::string::npos) << error.what();
  }
}

TEST(CheckpointFile, WritesAtomicallyAndFindsTheLatest) {
  const TemporaryDirectory directory;
  EXPECT_EQ(latest_checkpoint(directory.path()), std::nullopt);
  EXPECT_EQ(latest_checkpoint(directory.path() + "/missing"), std::nullopt);
  Checkpoint checkpoint = sample_checkpoint();
  for (const int64_t step : {10, 120, 30}) {
    checkpoint.step = step;
    write_checkpoint_file(checkpoint, checkpoint_path(directory.path(), step));
  }
  // What a crash mid-write leaves: a temporary file of a later step, never picked.
  std::ofstream(checkpoint_path(directory.path(), 500) + ".tmp") << "partial";
  const std::optional<std::string> latest = latest_checkpoint(directory.path());
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(*latest, checkpoint_path(directory.path(), 120));
  EXPECT_EQ(read_checkpoint_file(*latest).step, 120);
  EXPECT_FALSE(std::filesystem::exists(checkpoint_path(directory.path(), 120) + ".tmp"));

  // A damaged file names itself and the reason.
  std::filesystem::resize_file(*latest, std::filesystem::file_size(*latest) - 10);
  try {
    read_checkpoint_file(*latest);
    ADD_FAILURE() << "a truncated file was read";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find(*latest + "': truncated"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace burst::checkpoint
