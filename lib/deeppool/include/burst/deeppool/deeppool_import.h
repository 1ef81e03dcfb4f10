#pragma once
// Import of the per-layer A100 timings published by the DeepPool authors (MLSys 2022, MIT
// License; data/deeppool-a100/) into a burst profile table. docs/a100-profile.md explains
// every rule used here and the evidence for it.
//
// Both file kinds hold one layer per row and blocks that end in a sum row:
//   *.prof  <layer>  total_ms  forward_us  backward_us      block end: "SUM(avg) X [note]"
//   *.txt   <layer>  avg_ms  p50_ms  p90_ms  p99_ms          block end: "SUM(avg) X" or "sum: X"
// <layer> is op{json attributes}[per-device batch]input, input = [C,H,W] or a feature count:
//   conv2d{"in_channels":3,"kernel_size":3,"out_channels":64,"padding":1,"stride":1}[64][3,224,224]
// Lines "#config ..." are column headers, other "#NAME" lines name the section that follows.
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "burst/cost/profile.h"
#include "burst/graph/graph.h"
#include "burst/util/units.h"

namespace burst::deeppool {

// ---- Parsing -------------------------------------------------------------------------

enum class FileKind {
  Prof,        // total, forward and backward columns
  LayerTable,  // avg, p50, p90, p99: one time per row, passes not stated
};

struct Row {
  int line = 0;            // 1-based line in its file
  std::string op;          // DeepPool's layer name: "conv2d", "ReLU2d", "ResnetBottleneck", ...
  std::string attrs;       // the JSON object as written
  int64_t batch = 0;       // per-device batch (samples), >= 1
  std::vector<int64_t> input;  // per-sample input: [C, H, W], or [features] for "linear"/"ReLU1d"
  Seconds total;           // .prof total_ms, .txt avg_ms
  std::optional<Seconds> forward;   // .prof only
  std::optional<Seconds> backward;  // .prof only
};

struct Block {
  std::string section;  // the last "#NAME" line above the block, "" if none
  int64_t batch = 0;    // the batch of every row; 0 for a block without rows
  std::vector<Row> rows;
  double sum_ms = 0;    // the block's own sum line
  int sum_line = 0;
  // Sum of the rows' totals, the quantity the sum line states.
  Seconds row_total() const;
};

struct File {
  std::string name;  // as used in messages, e.g. "A100_vgg.prof"
  FileKind kind = FileKind::Prof;
  std::vector<Block> blocks;
};

// Parses one file. Strict: a malformed row, a row outside a block (no sum line after it),
// rows of different batches or column counts in one file, a negative or non-finite number
// are UserErrors naming "<name>:<line>". The kind comes from the first row's column count.
File parse_text(const std::string& text, const std::string& name);
File parse_file(const std::string& path);  // name = the path's file name

// ---- Importing -----------------------------------------------------------------------

// How the importer uses one data file (see docs/a100-profile.md, "Sources").
struct SourceSpec {
  std::string file;
  // Lower wins when several files give the same (signature, batch).
  int priority = 0;
  // Rows of smaller batches are skipped (the V1 tables carry large per-layer overheads at
  // small batches).
  int64_t min_batch = 1;
  // A conv2d/linear row also covers the relu that follows the layer (vggLayerGpuProfileA100.txt).
  bool row_includes_next_relu = false;
};
const std::vector<SourceSpec>& default_sources();

// Zoo models whose layers are matched by default (vgg16, resnets, inception_v3).
const std::vector<std::string>& default_models();

// The repository copy of the data, from the build-time definition BURST_SOURCE_DIR.
std::string default_data_dir();

// measured: one DeepPool row times this layer alone. derived: a share of a row that times
// several layers (ResnetBottleneck, a VGG conv+ReLU row), or a backward estimated from
// the forward because the row's own backward is missing.
enum class Provenance { Measured, Derived };
const char* provenance_name(Provenance provenance);

struct LayerCoverage {
  graph::LayerId id = 0;
  std::string name;
  std::string op;
  std::string signature;
  std::map<int64_t, Provenance> batches;  // profile entries of this signature
};

struct ModelCoverage {
  std::string model;  // zoo spec
  std::vector<LayerCoverage> layers;  // every layer but inputs, in graph order
};

struct SourceSummary {
  std::string file;
  int blocks = 0;
  int rows = 0;
  int rows_below_min_batch = 0;
  int rows_matched = 0;  // rows that gave at least one zoo layer a time
  std::vector<int64_t> batches;
  double max_sum_error = 0;  // max |rows - sum line| / sum line over the file's blocks
};

struct ImportResult {
  cost::Profile profile;
  std::vector<Provenance> provenance;  // parallel to profile.entries
  std::vector<ModelCoverage> models;
  std::vector<SourceSummary> sources;
  // Derived values left out because measured entries of the same signature lie at smaller
  // and larger batches.
  int derived_dropped = 0;
};

// Reads `sources` from `data_dir`, matches their rows to the layers of `models` (zoo specs
// or model files) by signature and builds one profile entry per (layer signature, batch).
// Throws UserError for a missing or malformed file or an unknown model.
ImportResult import_deeppool(const std::string& data_dir,
                             const std::vector<std::string>& models = default_models(),
                             const std::vector<SourceSpec>& sources = default_sources());

// The match report: per source, rows used and sum checks; per model, which layers got data
// at which batches (measured or derived) and which did not, with their signatures.
void print_match_report(const ImportResult& result, std::ostream& out);

}  // namespace burst::deeppool
