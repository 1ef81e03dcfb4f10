#include "burst/deeppool/deeppool_import.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/graph/model_json.h"
#include "burst/util/error.h"

namespace burst::deeppool {
namespace {

// The repository copy of the DeepPool data (set by lib/cost/import.cmake).
const std::string kDataDir = BURST_DEEPPOOL_DATA_DIR;

std::string data_path(const std::string& file) { return kDataDir + "/" + file; }

// The entry of `signature` at `batch`, or nullptr.
const cost::ProfileEntry* entry_of(const cost::Profile& profile, const std::string& signature, int64_t batch) {
  const auto* by_batch = profile.find(signature);
  if (by_batch == nullptr) return nullptr;
  const auto found = by_batch->find(batch);
  return found == by_batch->end() ? nullptr : found->second;
}

const LayerCoverage& layer_of(const ImportResult& result, const std::string& model,
                              const std::string& layer) {
  for (const ModelCoverage& coverage : result.models) {
    if (coverage.model != model) continue;
    for (const LayerCoverage& candidate : coverage.layers) {
      if (candidate.name == layer) return candidate;
    }
  }
  throw std::runtime_error("no layer " + model + "/" + layer);
}

// The import of all default models, done once for the tests that read it.
const ImportResult& full_import() {
  static const ImportResult result = import_deeppool(kDataDir);
  return result;
}

// ---- The sum lines --------------------------------------------------------------------

// Every block of every per-layer table ends in a sum line ("SUM(avg) X" in the V1 tables,
// "sum: X" in V2) that the parsed rows must reproduce within 1%. The V2 tables round the
// sum to 0.01 ms, so their small blocks differ by up to ~0.3%.
TEST(DeepPoolImportTest, EverySumLineOfTheLayerTablesIsReproducedByItsRows) {
  struct Expected {
    std::string file;
    size_t blocks;  // batches 1..128 (V2 inception: 1..64); resnet V2 has three sections
  };
  const std::vector<Expected> tables = {{"vggLayerGpuProfileA100.txt", 8},
                                        {"resnetLayerGpuProfileA100.txt", 8},
                                        {"resnetLayerGpuProfileA100V2.txt", 25},
                                        {"inceptionLayerGpuProfileA100.txt", 8},
                                        {"inceptionLayerGpuProfileA100V2.txt", 7}};
  double max_error = 0;
  for (const Expected& table : tables) {
    const File file = parse_file(data_path(table.file));
    EXPECT_EQ(file.kind, FileKind::LayerTable) << table.file;
    EXPECT_EQ(file.blocks.size(), table.blocks) << table.file;
    for (const Block& block : file.blocks) {
      const double rows_ms = block.row_total().ms();
      if (block.sum_ms == 0) {
        // resnetLayerGpuProfileA100V2.txt:307, "sum: 0.00" right under "#RESNET152".
        EXPECT_TRUE(block.rows.empty()) << table.file << ":" << block.sum_line;
        continue;
      }
      const double error = std::abs(rows_ms - block.sum_ms) / block.sum_ms;
      max_error = std::max(max_error, error);
      EXPECT_LT(error, 0.01) << table.file << ":" << block.sum_line << " rows " << rows_ms
                             << " ms, sum line " << block.sum_ms << " ms";
    }
  }
  EXPECT_GT(max_error, 0);  // the check compared something
}

// The .prof files carry the same kind of sum line.
TEST(DeepPoolImportTest, EverySumLineOfTheProfFilesIsReproducedByItsRows) {
  for (const std::string name : {"A100_vgg.prof", "A100_wrn.prof", "A100_inception.prof"}) {
    const File file = parse_file(data_path(name));
    EXPECT_EQ(file.kind, FileKind::Prof) << name;
    for (const Block& block : file.blocks) {
      EXPECT_NEAR(block.row_total().ms(), block.sum_ms, 0.01 * block.sum_ms)
          << name << ":" << block.sum_line;
    }
  }
}

// ---- Parsing --------------------------------------------------------------------------

TEST(DeepPoolImportTest, ParsesProfRowsSectionsAndSumLines) {
  const File file = parse_text(
      "#VGG\n"
      "  conv2d{\"in_channels\":3,\"kernel_size\":3,\"out_channels\":64,\"padding\":1,\"stride\":1}"
      "[64][3,224,224]   2.157      2157         6\n"
      "  linear{\"bias\":true,\"in_features\":4096,\"out_features\":1000}[64]4096   0.028  28  0\n"
      "  SUM(avg)  2.185  27.22(NoSync)\n",
      "t.prof");
  ASSERT_EQ(file.kind, FileKind::Prof);
  ASSERT_EQ(file.blocks.size(), 1u);
  const Block& block = file.blocks[0];
  EXPECT_EQ(block.section, "VGG");
  EXPECT_EQ(block.batch, 64);
  EXPECT_EQ(block.sum_line, 4);
  EXPECT_DOUBLE_EQ(block.sum_ms, 2.185);
  ASSERT_EQ(block.rows.size(), 2u);
  const Row& conv = block.rows[0];
  EXPECT_EQ(conv.line, 2);
  EXPECT_EQ(conv.op, "conv2d");
  EXPECT_EQ(conv.attrs,
            "{\"in_channels\":3,\"kernel_size\":3,\"out_channels\":64,\"padding\":1,\"stride\":1}");
  EXPECT_EQ(conv.input, (std::vector<int64_t>{3, 224, 224}));
  EXPECT_DOUBLE_EQ(conv.total.ms(), 2.157);
  EXPECT_DOUBLE_EQ(conv.forward->us(), 2157);
  EXPECT_DOUBLE_EQ(conv.backward->us(), 6);
  EXPECT_EQ(block.rows[1].input, (std::vector<int64_t>{4096}));  // a feature count
  EXPECT_NEAR(block.row_total().ms(), 2.185, 1e-12);
}

TEST(DeepPoolImportTest, ParsesLayerTablesWithHeadersAndEmptyBlocks) {
  const File file = parse_text(
      "   #config  avg(ms)    p50     p90     p99\n"
      "   maxPool2d{\"kernel_size\":[3,1],\"padding\":[1,0],\"stride\":2}[8][64,112,112]"
      "   0.100   0.1   0.1   0.2\n"
      "   sum:   0.10\n"
      "\n"
      "#RESNET152\n"
      "sum:    0.00\n",
      "t.txt");
  ASSERT_EQ(file.kind, FileKind::LayerTable);
  ASSERT_EQ(file.blocks.size(), 2u);
  EXPECT_EQ(file.blocks[0].batch, 8);
  EXPECT_FALSE(file.blocks[0].rows[0].forward.has_value());
  EXPECT_TRUE(file.blocks[1].rows.empty());
  EXPECT_EQ(file.blocks[1].section, "RESNET152");
}

// Malformed input fails with "<file>:<line>: <reason>".
TEST(DeepPoolImportTest, MalformedRowsNameFileAndLine) {
  const std::string conv =
      "conv2d{\"in_channels\":3,\"kernel_size\":3,\"out_channels\":64,\"padding\":1,\"stride\":1}";
  const auto error_of = [](const std::string& text) -> std::string {
    try {
      parse_text(text, "bad.prof");
    } catch (const UserError& error) {
      return error.what();
    }
    return "no error";
  };
  const auto expect_error = [&](const std::string& text, const std::string& prefix,
                                const std::string& part) {
    const std::string message = error_of(text);
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  const std::string row = conv + "[64][3,224,224] 2.1 2100 6\n";
  expect_error("\n" + conv + "[x][3,224,224] 2.1 2100 6\nSUM(avg) 2.1\n", "bad.prof:2:", "batch 'x'");
  expect_error(row + conv + "[64][3,224,224] 2.1 2100\nSUM(avg) 2.1\n", "bad.prof:2:",
               "row has 2 numbers, the rows above have 3");
  expect_error(row + conv + "[32][3,224,224] 2.1 2100 6\nSUM(avg) 2.1\n", "bad.prof:2:",
               "batch 32 in a block of batch 64");
  expect_error(conv + "[64][3,224,224] 2.1 -5 6\nSUM(avg) 2.1\n", "bad.prof:1:", "'-5'");
  expect_error(conv + "[64][3,224,224] 2.1 nan 6\nSUM(avg) 2.1\n", "bad.prof:1:", "'nan'");
  expect_error("conv2d{\"in_channels\":3[64][3,224,224] 1 1 1\nSUM(avg) 1\n", "bad.prof:1:",
               "unbalanced");
  expect_error("conv2d{\"in_channels\":}[64][3,224,224] 1 1 1\nSUM(avg) 1\n", "bad.prof:1:",
               "invalid JSON");
  expect_error(conv + "[64][3,,224] 1 1 1\nSUM(avg) 1\n", "bad.prof:1:", "input dimension");
  expect_error(conv + "[64][3,224,224]x 1 1 1\nSUM(avg) 1\n", "bad.prof:1:", "after the input");
  expect_error(conv + "[64][3,224,224] 1 1 1 1 1\nSUM(avg) 1\n", "bad.prof:1:", "got 5");
  expect_error("SUM(avg)\n", "bad.prof:1:", "sum line");
  expect_error("\n" + row + row, "bad.prof:2:", "without a sum line");
  expect_error(row + "#SECTION\nSUM(avg) 2\n", "bad.prof:2:", "section label inside a block");
  expect_error("#config\n", "bad.prof:1:", "no layer rows");
}

// ---- Mapping rows to zoo layers, by hand ----------------------------------------------

// vgg16 features.0 at batch 64 (A100_vgg.prof lines 1-2):
//   conv2d ...[64][3,224,224]   total 2.157 ms, forward 2157 us, backward 6 us
//   ReLU2d ...[64][64,224,224]  total 4.936 ms, forward 1205 us, backward 3730 us
// The total is the authority: conv forward 2.157, backward 2.157 - 2.157 = 0; ReLU forward
// 1.205, backward 4.936 - 1.205 = 3.731. The conv's backward sits on the ReLU row, so the
// pooled 3.731 ms are split by the forwards 2.157 : 1.205 (sum 3.362):
//   conv backward = 3.731 * 2.157 / 3.362 = 2.393748..., the ReLU keeps 1.337252...
// and the pair still totals 2.157 + 4.936 = 7.093 ms.
TEST(DeepPoolImportTest, Vgg16FirstConvAtBatch64ByHand) {
  const ImportResult& result = full_import();
  const LayerCoverage& conv = layer_of(result, "vgg16", "features.0");
  const cost::ProfileEntry* entry = entry_of(result.profile, conv.signature, 64);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->op, "conv2d");
  EXPECT_NEAR(entry->forward.ms(), 2.157, 1e-9);
  EXPECT_NEAR(entry->backward.ms(), 3.731 * 2.157 / 3.362, 1e-6);
  EXPECT_EQ(conv.batches.at(64), Provenance::Measured);
  // Work from the graph: 64 outputs x 224 x 224 x (2 x 3 x 3 x 3 + 1 bias) FLOPs.
  EXPECT_EQ(entry->forward_flops_per_sample, int64_t{64} * 224 * 224 * 55);
  EXPECT_EQ(entry->input_bytes_per_sample, int64_t{3} * 224 * 224 * 4);
  EXPECT_EQ(entry->output_bytes_per_sample, int64_t{64} * 224 * 224 * 4);
  EXPECT_EQ(entry->params, 64 * 27 + 64);

  // relu{}[64,224,224] is features.1 and features.3; their rows (lines 2 and 4) give
  //   features.1: forward 1.205, backward 1.337252 (above)
  //   features.3: forward 1.205, backward (20 us -> 0) + (15.309 - 1.205) = 14.104 ms pooled
  //               with conv 5.457 : relu 1.205 -> relu 14.104 * 1.205 / 6.662 = 2.551102
  // and the entry is their mean.
  const LayerCoverage& relu = layer_of(result, "vgg16", "features.1");
  const cost::ProfileEntry* relu_entry = entry_of(result.profile, relu.signature, 64);
  ASSERT_NE(relu_entry, nullptr);
  EXPECT_NEAR(relu_entry->forward.ms(), 1.205, 1e-9);
  const double first = 3.731 - 3.731 * 2.157 / 3.362;
  const double second = 14.104 * 1.205 / 6.662;
  EXPECT_NEAR(relu_entry->backward.ms(), (first + second) / 2, 1e-6);
}

// A row no other file gives: resnet34's fc at batch 128 comes only from
// resnetLayerGpuProfileA100.txt (V1), "linear{...512...1000}[128]512  0.030": a total,
// split with backward = 2 x forward -> 0.010 + 0.020 ms. V1 rows below batch 64 are not
// used, so the same layer has no entry at batch 32.
TEST(DeepPoolImportTest, Resnet34FcFromTheV1TableByHand) {
  const ImportResult& result = full_import();
  const LayerCoverage& fc = layer_of(result, "resnet:depth=34", "fc");
  const cost::ProfileEntry* entry = entry_of(result.profile, fc.signature, 128);
  ASSERT_NE(entry, nullptr);
  EXPECT_NEAR(entry->forward.ms(), 0.010, 1e-9);
  EXPECT_NEAR(entry->backward.ms(), 0.020, 1e-9);
  EXPECT_EQ(entry_of(result.profile, fc.signature, 32), nullptr);
  EXPECT_EQ(fc.batches.count(32), 0u);
}

// Inception's factorized 7x7 convs: DeepPool writes "kernel_size":[1,7],"padding":[0,3].
// Mixed_6b.branch7x7_2 (128 -> 128, 1x7) at batch 64, A100_inception.prof line 40:
//   total 0.251 ms, forward 77 us -> forward 0.077, backward 0.174.
TEST(DeepPoolImportTest, NonSquareInceptionKernelByHand) {
  const ImportResult& result = full_import();
  const LayerCoverage& conv = layer_of(result, "inception_v3", "Mixed_6b.branch7x7_2.conv");
  const cost::ProfileEntry* entry = entry_of(result.profile, conv.signature, 64);
  ASSERT_NE(entry, nullptr);
  EXPECT_NEAR(entry->forward.ms(), 0.077, 1e-9);
  EXPECT_NEAR(entry->backward.ms(), 0.174, 1e-9);
  // The 7x1 conv of the same width has its own row (0.253 ms), not the 1x7 one.
  const LayerCoverage& column = layer_of(result, "inception_v3", "Mixed_6b.branch7x7dbl_2.conv");
  EXPECT_NEAR(entry_of(result.profile, column.signature, 64)->forward.ms(), 0.079, 1e-9);
}

// One wide_resnet101_2 layer4 block (2048 -> 1024 -> 1024 -> 2048 at 7x7, no downsample)
// as a model file, for the tests of ResnetBottleneck rows.
std::string one_block_model_file() {
  graph::GraphBuilder b("one_block");
  const std::string x = b.input("x", {2048, 7, 7});
  const auto conv = [](int64_t out, int64_t kernel, int64_t padding) {
    graph::Conv2dAttrs attrs;
    attrs.out_channels = out;
    attrs.kernel = {kernel, kernel};
    attrs.padding = {padding, padding};
    attrs.bias = false;
    return attrs;
  };
  std::string y = b.conv2d("conv1", x, conv(1024, 1, 0));
  y = b.relu("relu1", b.batchnorm2d("bn1", y));
  y = b.conv2d("conv2", y, conv(1024, 3, 1));
  y = b.relu("relu2", b.batchnorm2d("bn2", y));
  y = b.batchnorm2d("bn3", b.conv2d("conv3", y, conv(2048, 1, 0)));
  b.relu("relu3", b.add_("add", {y, x}));
  const std::string path = ::testing::TempDir() + "/deeppool_one_block.json";
  graph::save_model_file(std::move(b).build(), path);
  return path;
}

// A ResnetBottleneck row is split over the block's layers without losing time. With
// A100_wrn.prof alone, every layer of the block gets a derived entry at batch 3; the
// file's two rows for this block at batch 3 (layer4.1, layer4.2) are averaged, so the
// twelve layers must add up to the average of the two rows.
TEST(DeepPoolImportTest, BottleneckRowSplitKeepsTheBlockTotal) {
  const std::string path = one_block_model_file();
  const ImportResult result =
      import_deeppool(kDataDir, {path}, {SourceSpec{"A100_wrn.prof", 1, 1, false}});
  std::remove(path.c_str());

  double rows_ms = 0;
  int rows = 0;
  for (const Block& block : parse_file(data_path("A100_wrn.prof")).blocks) {
    for (const Row& row : block.rows) {
      if (row.batch == 3 && row.op == "ResnetBottleneck" && row.input[0] == 2048) {
        rows_ms += row.total.ms();
        ++rows;
      }
    }
  }
  ASSERT_EQ(rows, 2);
  double layers_ms = 0, convs_ms = 0;
  for (const LayerCoverage& layer : result.models.at(0).layers) {
    const cost::ProfileEntry* entry = entry_of(result.profile, layer.signature, 3);
    ASSERT_NE(entry, nullptr) << layer.name;
    EXPECT_EQ(layer.batches.at(3), Provenance::Derived) << layer.name;
    const double total = entry->forward.ms() + entry->backward.ms();
    layers_ms += total;
    if (layer.op == "conv2d") convs_ms += total;
  }
  EXPECT_NEAR(layers_ms, rows_ms / rows, 1e-5);
  // resnetLayerGpuProfileA100V2.txt times these convs alone at 72-86% of the block
  // (batches 1-32); the roofline split must land near that, far from a FLOP split (~99%).
  EXPECT_GT(convs_ms / layers_ms, 0.75);
  EXPECT_LT(convs_ms / layers_ms, 0.95);
}

// With all sources, the block's convs are measured by resnetLayerGpuProfileA100V2.txt at
// batches 1, 2, 4, ...; their derived share at batch 3 lies between measured batches and
// is left out, while the batchnorms (never measured alone) keep theirs.
TEST(DeepPoolImportTest, DerivedValuesBetweenMeasuredBatchesAreLeftOut) {
  const std::string path = one_block_model_file();
  const ImportResult result = import_deeppool(kDataDir, {path});
  std::remove(path.c_str());
  for (const LayerCoverage& layer : result.models.at(0).layers) {
    if (layer.op == "conv2d") {
      EXPECT_EQ(layer.batches.at(2), Provenance::Measured) << layer.name;
      EXPECT_EQ(layer.batches.count(3), 0u) << layer.name;
      EXPECT_EQ(layer.batches.at(4), Provenance::Measured) << layer.name;
    }
    if (layer.op == "batchnorm2d") {
      EXPECT_EQ(layer.batches.at(3), Provenance::Derived) << layer.name;
    }
  }
  EXPECT_GT(result.derived_dropped, 0);
}

// ---- The whole import -----------------------------------------------------------------

TEST(DeepPoolImportTest, CoverageOfVgg16) {
  const ImportResult& result = full_import();
  // Conv layers: .prof batches measured, batch 128 derived from the V1 conv+ReLU rows.
  const LayerCoverage& conv = layer_of(result, "vgg16", "features.2");
  std::vector<int64_t> measured, derived;
  for (const auto& [batch, provenance] : conv.batches) {
    (provenance == Provenance::Measured ? measured : derived).push_back(batch);
  }
  EXPECT_EQ(measured, (std::vector<int64_t>{1, 2, 3, 4, 6, 8, 16, 32, 64}));
  EXPECT_EQ(derived, (std::vector<int64_t>{128}));
  // DeepPool's VGG has no adaptive pool, dropout or loss layer.
  EXPECT_TRUE(layer_of(result, "vgg16", "avgpool").batches.empty());
  EXPECT_TRUE(layer_of(result, "vgg16", "classifier.2").batches.empty());
  EXPECT_TRUE(layer_of(result, "vgg16", "loss").batches.empty());
}

TEST(DeepPoolImportTest, ProfileIsValidAndRoundTrips) {
  const ImportResult& result = full_import();
  ASSERT_EQ(result.provenance.size(), result.profile.entries.size());
  EXPECT_EQ(result.profile.device, "a100");
  EXPECT_NE(result.profile.source.find("MIT License"), std::string::npos);
  const cost::Profile reread = cost::profile_from_json_text(profile_to_json_text(result.profile));
  EXPECT_EQ(reread.entries.size(), result.profile.entries.size());
  for (const cost::ProfileEntry& entry : result.profile.entries) {
    EXPECT_GT(entry.forward.s(), 0) << entry.signature << " @" << entry.batch;
    EXPECT_GE(entry.backward.s(), 0) << entry.signature << " @" << entry.batch;
  }
  for (const SourceSummary& source : result.sources) {
    EXPECT_LT(source.max_sum_error, 0.01) << source.file;
  }
}

// data/profiles/a100.json is what `burst import-deeppool` makes now; after a change to
// the importer, the zoo or layer signatures, regenerate it (docs/a100-profile.md).
TEST(DeepPoolImportTest, CommittedProfileIsUpToDate) {
  const cost::Profile committed = cost::load_profile_file(kDataDir + "/../profiles/a100.json");
  const cost::Profile& fresh = full_import().profile;
  ASSERT_EQ(committed.entries.size(), fresh.entries.size());
  EXPECT_EQ(committed.source, fresh.source);
  for (size_t i = 0; i < fresh.entries.size(); ++i) {
    const cost::ProfileEntry& a = committed.entries[i];
    const cost::ProfileEntry& b = fresh.entries[i];
    ASSERT_EQ(a.signature, b.signature) << i;
    ASSERT_EQ(a.batch, b.batch) << a.signature;
    EXPECT_NEAR(a.forward.ms(), b.forward.ms(), 1e-9) << a.signature << " @" << a.batch;
    EXPECT_NEAR(a.backward.ms(), b.backward.ms(), 1e-9) << a.signature << " @" << a.batch;
  }
}

}  // namespace
}  // namespace burst::deeppool
