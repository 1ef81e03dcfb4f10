#include "burst/deeppool/deeppool_import.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/graph/model_json.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"
#include "burst/util/table.h"

namespace burst::deeppool {

using graph::Graph;
using graph::LayerId;
using graph::OpKind;
using nlohmann::json;

// ======================================================================================
// Parsing
// ======================================================================================

Seconds Block::row_total() const {
  Seconds total;
  for (const Row& row : rows) total += row.total;
  return total;
}

namespace {

std::vector<std::string> split_whitespace(const std::string& line) {
  std::vector<std::string> tokens;
  std::istringstream stream(line);
  std::string token;
  while (stream >> token) tokens.push_back(token);
  return tokens;
}

// Reads files of one text format; every error names "<file>:<line>".
class Parser {
 public:
  explicit Parser(std::string name) : name_(std::move(name)) {}

  [[noreturn]] void fail(int line, const std::string& problem) const {
    throw UserError(fmt::format("{}:{}: {}", name_, line, problem));
  }

  // A finite, non-negative decimal number, the whole token.
  double number(int line, const std::string& token, const char* what) const {
    double value = 0;
    const char* end = token.data() + token.size();
    const auto [ptr, ec] = std::from_chars(token.data(), end, value);
    if (ec != std::errc() || ptr != end || !std::isfinite(value) || value < 0) {
      fail(line, fmt::format("{} '{}' is not a non-negative number", what, text_excerpt(token)));
    }
    return value;
  }

  // A positive decimal integer, the whole token.
  int64_t count(int line, const std::string& token, const char* what) const {
    int64_t value = 0;
    const char* end = token.data() + token.size();
    const auto [ptr, ec] = std::from_chars(token.data(), end, value);
    if (ec != std::errc() || ptr != end || value <= 0) {
      fail(line, fmt::format("{} '{}' is not a positive integer", what, text_excerpt(token)));
    }
    return value;
  }

  // op{json}[batch]input, input = [d0,d1,...] or a single count.
  void layer(int line, const std::string& token, Row& row) const {
    const std::string where = fmt::format("layer '{}'", text_excerpt(token));
    const size_t open = token.find('{');
    if (open == std::string::npos || open == 0) fail(line, where + ": expected op{attributes}");
    row.op = token.substr(0, open);
    for (const char c : row.op) {
      if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_') {
        fail(line, where + ": op name must be letters, digits and '_'");
      }
    }
    // The attribute object ends at its matching brace (values hold no braces in strings).
    size_t close = open;
    int depth = 0;
    for (; close < token.size(); ++close) {
      if (token[close] == '{') ++depth;
      if (token[close] == '}' && --depth == 0) break;
    }
    if (close == token.size()) fail(line, where + ": unbalanced '{'");
    row.attrs = token.substr(open, close - open + 1);
    bool is_object = false;
    try {
      is_object = parse_json_text(row.attrs).is_object();
    } catch (const UserError& error) {
      fail(line, where + ": attributes: " + error.what());
    }
    if (!is_object) fail(line, where + ": attributes are not a JSON object");
    size_t at = close + 1;
    const auto bracketed = [&](const char* what) {
      if (at >= token.size() || token[at] != '[') fail(line, fmt::format("{}: expected [{}]", where, what));
      const size_t end = token.find(']', at);
      if (end == std::string::npos) fail(line, fmt::format("{}: unclosed [{}]", where, what));
      std::string inside = token.substr(at + 1, end - at - 1);
      at = end + 1;
      return inside;
    };
    row.batch = count(line, bracketed("batch"), "batch");
    if (at < token.size() && token[at] == '[') {
      std::string dims = bracketed("input shape");
      std::istringstream stream(dims);
      std::string dim;
      while (std::getline(stream, dim, ',')) row.input.push_back(count(line, dim, "input dimension"));
      if (row.input.empty() || dims.back() == ',') fail(line, where + ": malformed input shape");
    } else {
      const std::string features = token.substr(at);
      row.input.push_back(count(line, features, "input feature count"));
      at = token.size();
    }
    if (at != token.size()) fail(line, where + ": unexpected text after the input shape");
  }

 private:
  std::string name_;
};

bool is_sum_label(const std::string& token) { return token == "SUM(avg)" || token == "sum:"; }

}  // namespace

// Long: the published files' grammar, line by line, with one state
// (the current model and section) that every case reads and updates.
File parse_text(const std::string& text, const std::string& name) {
  const Parser parser(name);
  File file;
  file.name = name;
  size_t columns = 0;  // numbers per row; 0 until the first row
  std::string section;
  Block block;
  int block_first_line = 0;
  int line_number = 0;
  std::istringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<std::string> tokens = split_whitespace(line);
    if (tokens.empty()) continue;
    if (tokens[0].front() == '#') {
      if (tokens[0] == "#config") continue;  // column header of a block
      if (!block.rows.empty()) parser.fail(line_number, "section label inside a block");
      section = tokens[0].substr(1);
      continue;
    }
    if (is_sum_label(tokens[0])) {
      // "SUM(avg) 103.837 110.12": the .prof files add a second figure (a whole-iteration
      // measurement, sometimes tagged "(NoSync)"); only the first is the rows' sum.
      if (tokens.size() < 2 || tokens.size() > 3) {
        parser.fail(line_number, "sum line must be '" + tokens[0] + " <ms> [note]'");
      }
      block.sum_ms = parser.number(line_number, tokens[1], "sum");
      block.sum_line = line_number;
      block.section = section;
      file.blocks.push_back(std::move(block));
      block = Block{};
      continue;
    }
    Row row;
    row.line = line_number;
    parser.layer(line_number, tokens[0], row);
    const size_t numbers = tokens.size() - 1;
    if (columns == 0) {
      if (numbers == 3) {
        file.kind = FileKind::Prof;
      } else if (numbers == 4) {
        file.kind = FileKind::LayerTable;
      } else {
        parser.fail(line_number, fmt::format("a row needs 3 numbers (total_ms forward_us "
                                             "backward_us) or 4 (avg p50 p90 p99), got {}",
                                             numbers));
      }
      columns = numbers;
    } else if (numbers != columns) {
      parser.fail(line_number,
                  fmt::format("row has {} numbers, the rows above have {}", numbers, columns));
    }
    row.total = Seconds::from_ms(parser.number(line_number, tokens[1], "time"));
    for (size_t i = 2; i < tokens.size(); ++i) parser.number(line_number, tokens[i], "time");
    if (file.kind == FileKind::Prof) {
      row.forward = Seconds::from_us(parser.number(line_number, tokens[2], "forward time"));
      row.backward = Seconds::from_us(parser.number(line_number, tokens[3], "backward time"));
    }
    if (block.rows.empty()) {
      block.batch = row.batch;
      block_first_line = line_number;
    } else if (row.batch != block.batch) {
      parser.fail(line_number, fmt::format("batch {} in a block of batch {} (from line {})",
                                           row.batch, block.batch, block_first_line));
    }
    block.rows.push_back(std::move(row));
  }
  if (!block.rows.empty()) {
    parser.fail(block_first_line, "the rows from here on end without a sum line");
  }
  if (columns == 0) parser.fail(line_number, "no layer rows");
  return file;
}

File parse_file(const std::string& path) {
  const std::string text = read_text_file(path, "DeepPool profile");
  const size_t slash = path.find_last_of('/');
  return parse_text(text, slash == std::string::npos ? path : path.substr(slash + 1));
}

// ======================================================================================
// Importing
// ======================================================================================

const std::vector<SourceSpec>& default_sources() {
  // Priorities (lower wins): the .prof files state forward and backward; the V2 tables
  // agree with them within 0-8%; the V1 tables carry a per-layer overhead that makes
  // small batches 1.3-4.6x slower than the same layers elsewhere, so only their batches
  // >= 64 are used (within 11-26% there). See docs/a100-profile.md.
  static const std::vector<SourceSpec> sources = {
      {"A100_vgg.prof", 1, 1, false},
      {"A100_wrn.prof", 1, 1, false},
      {"A100_inception.prof", 1, 1, false},
      {"resnetLayerGpuProfileA100V2.txt", 2, 1, false},
      {"inceptionLayerGpuProfileA100V2.txt", 2, 1, false},
      {"vggLayerGpuProfileA100.txt", 3, 64, true},
      {"resnetLayerGpuProfileA100.txt", 3, 64, false},
      {"inceptionLayerGpuProfileA100.txt", 3, 64, false},
  };
  return sources;
}

const std::vector<std::string>& default_models() {
  // resnet50 gets its convolutions from the ResNet-152 table (same stage shapes); the
  // generic specs name the other depths the tables cover.
  static const std::vector<std::string> models = {
      "vgg16", "resnet50", "wide_resnet101_2", "inception_v3", "resnet:depth=34",
      "resnet:depth=152"};
  return models;
}

std::string default_data_dir() {
#ifdef BURST_SOURCE_DIR
  return std::string(BURST_SOURCE_DIR) + "/data/deeppool-a100";
#else
  return "data/deeppool-a100";
#endif
}

const char* provenance_name(Provenance provenance) {
  return provenance == Provenance::Measured ? "measured" : "derived";
}

namespace {

// ---- Constants, each with its evidence (docs/a100-profile.md) ------------------------

// backward / forward for rows that give only a total (the .txt tables), by burst op.
// conv2d: median of the 2,162 conv rows of A100_inception.prof (2.21); pools: medians of
// the .prof pool rows (maxpool 3.3-3.8, avgpool 3.1); linear: two GEMMs of the forward's
// size; relu: backward moves 3 tensors, forward 2; data movement: as much back as forward.
double backward_ratio(const std::string& op) {
  if (op == "conv2d") return 2.2;
  if (op == "linear") return 2.0;
  if (op == "maxpool2d") return 3.6;
  if (op == "avgpool2d") return 3.1;
  if (op == "relu") return 1.5;
  return 1.0;  // adaptive_avgpool2d (A100_wrn.prof: 1.06), flatten, concat
}

// A conv2d/linear row of a .prof file whose backward is below this fraction of its forward
// has lost its backward (it landed on no other row); it gets backward_ratio x forward.
constexpr double kMissingBackwardFraction = 0.1;

// Apportioning a row that times several layers: each layer's share is its roofline time
// max(FLOPs / R, bytes / BW) at the row's batch (bytes: input and output activations plus
// fp32 weights). BW: the VGG ReLU forward rows run at 1.36 TB/s. R: the value with which
// splitting the ResnetBottleneck rows of A100_wrn.prof reproduces the conv share of the
// same blocks that resnetLayerGpuProfileA100V2.txt measures (0.49-0.86 by stage at batch
// 32; rms error 0.06 over 33 blocks x 6 batches, mean error +0.01). A FLOP-only split
// would give the convs ~99%.
constexpr double kSplitFlopsPerSecond = 60e12;
constexpr double kSplitBytesPerSecond = 1.4e12;

// ---- Match keys ----------------------------------------------------------------------
// A DeepPool row and a burst layer meet on what DeepPool records: burst's op name, the
// attributes the row states (canonical JSON, pairs as [h, w]) and the per-sample input.
// Bias is not recorded for convolutions, so it is not part of a conv key.

std::string shape_key(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string make_key(const std::string& op, const json& attrs, const std::vector<int64_t>& input) {
  return op + attrs.dump() + shape_key(input);
}

json pair_json(graph::Pair pair) { return json::array({pair.h, pair.w}); }

// DeepPool writes a square window as one integer and others as [h, w].
json row_pair(JsonObjectReader& reader, const std::string& key) {
  const json& value = reader.require(key);
  if (value.is_array()) {
    if (value.size() != 2) reader.fail(key, "must be an integer or [h, w]");
    return json::array({reader.as_int(key, value[0]), reader.as_int(key, value[1])});
  }
  const int64_t both = reader.as_int(key, value);
  return json::array({both, both});
}

// The match key of a DeepPool row; UserError naming file:line for a malformed row.
// Long: one case per DeepPool row kind, each reading its own fields.
std::string row_key(const Row& row, const std::string& file) {
  const std::string where = fmt::format("{}:{}: {}", file, row.line, row.op);
  const json attrs = parse_json_text(row.attrs);
  JsonObjectReader reader(attrs, where);
  const auto require_rank = [&](size_t rank) {
    if (row.input.size() != rank) {
      throw UserError(fmt::format("{}: input {} should have {} dimension{}", where,
                                  shape_key(row.input), rank, rank == 1 ? "" : "s"));
    }
  };
  const auto require_input = [&](const char* key, int64_t expected) {
    const int64_t value = reader.get_int(key);
    if (value != expected) {
      reader.fail(key, fmt::format("is {} but the input {} has {}", value, shape_key(row.input),
                                   expected));
    }
  };
  std::string op;
  json canonical = json::object();
  if (row.op == "conv2d") {
    require_rank(3);
    require_input("in_channels", row.input[0]);
    op = "conv2d";
    canonical = {{"kernel", row_pair(reader, "kernel_size")},
                 {"out_channels", reader.get_int("out_channels")},
                 {"padding", row_pair(reader, "padding")},
                 {"stride", row_pair(reader, "stride")}};
  } else if (row.op == "maxPool2d" || row.op == "avgPool2d") {
    require_rank(3);
    op = row.op == "maxPool2d" ? "maxpool2d" : "avgpool2d";
    canonical = {{"kernel", row_pair(reader, "kernel_size")},
                 {"padding", row_pair(reader, "padding")},
                 {"stride", row_pair(reader, "stride")}};
  } else if (row.op == "adAvgPool2d") {
    require_rank(3);
    op = "adaptive_avgpool2d";
    canonical = {{"output", json::array({reader.get_int("output_height"),
                                         reader.get_int("output_width")})}};
  } else if (row.op == "linear") {
    require_rank(1);
    require_input("in_features", row.input[0]);
    op = "linear";
    canonical = {{"bias", reader.as_bool("bias", reader.require("bias"))},
                 {"out_features", reader.get_int("out_features")}};
  } else if (row.op == "ReLU2d" || row.op == "ReLU1d") {
    require_rank(row.op == "ReLU2d" ? 3 : 1);
    op = "relu";
    // In-place or not and DeepPool's window placeholders (1, 1, 0) do not change the work.
    for (const char* key : {"inplace", "kernel_size", "padding", "stride"}) reader.find(key);
  } else if (row.op == "flatten" || row.op == "concat") {
    require_rank(3);
    op = row.op;
    reader.find("kernel_size");  // a placeholder
  } else if (row.op == "ResnetBottleneck") {
    require_rank(3);
    require_input("inplanes", row.input[0]);
    op = "bottleneck";
    json downsample = nullptr;
    if (const json* params = reader.find("downsampleParams")) {
      // [[in, out, stride], out]: the 1x1 projection conv and its batchnorm's channels.
      if (!params->is_array() || params->size() != 2 || !(*params)[0].is_array() ||
          (*params)[0].size() != 3) {
        reader.fail("downsampleParams", "must be [[in, out, stride], channels]");
      }
      downsample = json::array({json::array({reader.as_int("downsampleParams", (*params)[0][0]),
                                             reader.as_int("downsampleParams", (*params)[0][1]),
                                             reader.as_int("downsampleParams", (*params)[0][2])}),
                                reader.as_int("downsampleParams", (*params)[1])});
    }
    canonical = {{"base_width", reader.get_int("base_width")},
                 {"dilation", reader.get_int("dilation")},
                 {"downsample", downsample},
                 {"groups", reader.get_int("groups")},
                 {"inplanes", row.input[0]},
                 {"planes", reader.get_int("planes")},
                 {"stride", reader.get_int("stride", 1)}};
  } else {
    throw UserError(fmt::format("{}: unknown DeepPool layer '{}'", where, row.op));
  }
  reader.reject_unknown_keys();
  return make_key(op, canonical, row.input);
}

const graph::Shape& input_shape(const Graph& graph, LayerId id, size_t index = 0) {
  return graph.info(graph.inputs(id).at(index)).output_shape;
}

// The match key of a burst layer, or nullopt for layers DeepPool has no row kind for
// (batchnorm, add, dropout, losses, grouped or dilated convs, ceil-mode pools, ...).
// Long: one case per op kind, the mirror of row_key's cases.
std::optional<std::string> layer_key(const Graph& graph, LayerId id) {
  const graph::LayerSpec& layer = graph.layer(id);
  if (layer.op() == OpKind::Input) return std::nullopt;
  const graph::Shape& in = input_shape(graph, id);
  const std::string op = graph::op_name(layer.op());
  switch (layer.op()) {
    case OpKind::Conv2d: {
      const auto& a = std::get<graph::Conv2dAttrs>(layer.attrs);
      if (a.groups != 1 || a.dilation != graph::Pair{1, 1} || in.size() != 3) return std::nullopt;
      return make_key(op,
                      {{"kernel", pair_json(a.kernel)},
                       {"out_channels", a.out_channels},
                       {"padding", pair_json(a.padding)},
                       {"stride", pair_json(a.stride)}},
                      in);
    }
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d: {
      graph::Pair kernel, stride, padding;
      if (layer.op() == OpKind::MaxPool2d) {
        const auto& a = std::get<graph::MaxPool2dAttrs>(layer.attrs);
        if (a.ceil_mode) return std::nullopt;
        kernel = a.kernel, stride = a.stride, padding = a.padding;
      } else {
        const auto& a = std::get<graph::AvgPool2dAttrs>(layer.attrs);
        if (a.ceil_mode || !a.count_include_pad) return std::nullopt;  // DeepPool: torch defaults
        kernel = a.kernel, stride = a.stride, padding = a.padding;
      }
      if (stride == graph::Pair{0, 0}) stride = kernel;  // unset stride = kernel
      if (in.size() != 3) return std::nullopt;
      return make_key(op,
                      {{"kernel", pair_json(kernel)},
                       {"padding", pair_json(padding)},
                       {"stride", pair_json(stride)}},
                      in);
    }
    case OpKind::AdaptiveAvgPool2d: {
      const auto& a = std::get<graph::AdaptiveAvgPool2dAttrs>(layer.attrs);
      if (in.size() != 3) return std::nullopt;
      return make_key(op, {{"output", pair_json(a.output)}}, in);
    }
    case OpKind::Linear: {
      const auto& a = std::get<graph::LinearAttrs>(layer.attrs);
      if (in.size() != 1 || !a.tied_to.empty()) return std::nullopt;
      return make_key(op, {{"bias", a.bias}, {"out_features", a.out_features}}, in);
    }
    case OpKind::Relu:
      if (in.size() != 3 && in.size() != 1) return std::nullopt;
      return make_key(op, json::object(), in);
    case OpKind::Flatten:
      if (in.size() != 3) return std::nullopt;
      return make_key(op, json::object(), in);
    case OpKind::Concat: {
      // DeepPool states the channel total of the inputs: [sum C, H, W].
      const auto& a = std::get<graph::ConcatAttrs>(layer.attrs);
      if (a.axis != 0 || in.size() != 3) return std::nullopt;
      graph::Shape total = in;
      total[0] = 0;
      for (size_t i = 0; i < graph.inputs(id).size(); ++i) total[0] += input_shape(graph, id, i)[0];
      return make_key(op, json::object(), total);
    }
    default:
      return std::nullopt;
  }
}

// ---- torchvision Bottleneck blocks, found by structure -------------------------------
//   x -> conv1 1x1 -> bn -> relu -> conv2 3x3 (stride) -> bn -> relu -> conv3 1x1 -> bn -+
//   x -------------------------------------- [downsample: conv 1x1 (stride) -> bn] ------+-> add -> relu

struct Bottleneck {
  std::vector<LayerId> layers;  // every layer of the block, in graph order
  std::string key;
};

bool is_op(const Graph& graph, LayerId id, OpKind op) { return graph.layer(id).op() == op; }

// The single input of `id`, if `id` has one input and is that input's only consumer.
std::optional<LayerId> chain_input(const Graph& graph, LayerId id) {
  if (graph.inputs(id).size() != 1) return std::nullopt;
  const LayerId in = graph.inputs(id)[0];
  if (graph.consumers(in).size() != 1) return std::nullopt;
  return in;
}

// Long: walks one ResNet bottleneck backwards from its last ReLU,
// each step checking the shape the next relies on.
std::optional<Bottleneck> bottleneck_ending_at(const Graph& graph, LayerId relu) {
  if (!is_op(graph, relu, OpKind::Relu) || graph.inputs(relu).size() != 1) return std::nullopt;
  const LayerId add = graph.inputs(relu)[0];
  if (!is_op(graph, add, OpKind::Add) || graph.inputs(add).size() != 2 ||
      graph.consumers(add).size() != 1) {
    return std::nullopt;
  }
  const OpKind pattern[] = {OpKind::BatchNorm2d, OpKind::Conv2d, OpKind::Relu, OpKind::BatchNorm2d,
                            OpKind::Conv2d, OpKind::Relu, OpKind::BatchNorm2d, OpKind::Conv2d};
  for (size_t main = 0; main < 2; ++main) {
    std::vector<LayerId> chain;  // bn3, conv3, relu2, bn2, conv2, relu1, bn1, conv1
    LayerId at = graph.inputs(add)[main];
    bool ok = graph.consumers(at).size() == 1;
    for (size_t i = 0; ok && i < std::size(pattern); ++i) {
      ok = is_op(graph, at, pattern[i]);
      chain.push_back(at);
      if (ok && i + 1 < std::size(pattern)) {
        const auto next = chain_input(graph, at);
        ok = next.has_value();
        if (ok) at = *next;
      }
    }
    if (!ok || graph.inputs(chain.back()).size() != 1) continue;
    const LayerId x = graph.inputs(chain.back())[0];
    std::vector<LayerId> layers = chain;
    layers.push_back(add);
    layers.push_back(relu);
    const LayerId shortcut = graph.inputs(add)[1 - main];
    std::optional<LayerId> downsample_conv;
    if (shortcut != x) {
      const auto conv = chain_input(graph, shortcut);
      if (!is_op(graph, shortcut, OpKind::BatchNorm2d) || graph.consumers(shortcut).size() != 1 ||
          !conv || !is_op(graph, *conv, OpKind::Conv2d) || graph.inputs(*conv).size() != 1 ||
          graph.inputs(*conv)[0] != x) {
        continue;
      }
      downsample_conv = *conv;
      layers.push_back(shortcut);
      layers.push_back(*conv);
    }
    const auto conv_attrs = [&](LayerId id) { return std::get<graph::Conv2dAttrs>(graph.layer(id).attrs); };
    const auto conv1 = conv_attrs(chain[7]), conv2 = conv_attrs(chain[4]), conv3 = conv_attrs(chain[1]);
    const graph::Pair one{1, 1}, zero{0, 0};
    const int64_t in_channels = graph.info(x).output_shape.at(0);
    const int64_t width = conv1.out_channels;
    const int64_t planes = conv3.out_channels / 4;
    const int64_t groups = conv2.groups;
    const int64_t dilation = conv2.dilation.h;
    const int64_t stride = conv2.stride.h;
    if (conv1.kernel != one || conv1.stride != one || conv1.padding != zero || conv1.groups != 1 ||
        conv3.kernel != one || conv3.stride != one || conv3.padding != zero || conv3.groups != 1 ||
        conv2.kernel != graph::Pair{3, 3} || conv2.out_channels != width ||
        conv2.dilation != graph::Pair{dilation, dilation} ||
        conv2.padding != graph::Pair{dilation, dilation} ||
        conv2.stride != graph::Pair{stride, stride} || conv3.out_channels % 4 != 0 ||
        (width * 64) % (planes * groups) != 0) {
      continue;
    }
    json downsample = nullptr;
    if (downsample_conv) {
      const auto ds = conv_attrs(*downsample_conv);
      if (ds.kernel != one || ds.padding != zero || ds.stride != graph::Pair{stride, stride}) continue;
      downsample = json::array({json::array({in_channels, ds.out_channels, stride}), ds.out_channels});
    }
    std::sort(layers.begin(), layers.end());
    const json attrs = {{"base_width", width * 64 / (planes * groups)},
                        {"dilation", dilation},
                        {"downsample", downsample},
                        {"groups", groups},
                        {"inplanes", in_channels},
                        {"planes", planes},
                        {"stride", stride}};
    return Bottleneck{layers, make_key("bottleneck", attrs, graph.info(x).output_shape)};
  }
  return std::nullopt;
}

// ---- Times of rows --------------------------------------------------------------------

struct RowTime {
  Seconds forward;
  Seconds backward;
  bool backward_estimated = false;
};

bool is_compute_row(const Row& row) { return row.op == "conv2d" || row.op == "linear"; }
bool is_relu_row(const Row& row) { return row.op == "ReLU2d" || row.op == "ReLU1d"; }

// Forward and backward of every row of one block. `ops` are the rows' burst op names.
std::vector<RowTime> block_times(const File& file, const Block& block,
                                 const std::vector<std::string>& ops) {
  std::vector<RowTime> times(block.rows.size());
  for (size_t i = 0; i < block.rows.size(); ++i) {
    const Row& row = block.rows[i];
    if (file.kind == FileKind::Prof) {
      // The total is the authority (it is what the sum line adds up); the forward column
      // is kept, the backward is the rest.
      const Seconds forward = std::min(*row.forward, row.total);
      times[i] = {forward, row.total - forward};
    } else {
      const Seconds forward = row.total / (1 + backward_ratio(ops[i]));
      times[i] = {forward, row.total - forward};
    }
  }
  if (file.kind != FileKind::Prof) return times;
  for (size_t i = 0; i + 1 < block.rows.size(); ++i) {
    // A conv2d/linear row followed by a ReLU row: the layer's backward is recorded on the
    // ReLU (conv backward ~0, ReLU backward many times its forward). Pool the two
    // backwards and split them in proportion to the two forwards.
    if (!is_compute_row(block.rows[i]) || !is_relu_row(block.rows[i + 1])) continue;
    const Seconds forward = times[i].forward + times[i + 1].forward;
    const Seconds backward = times[i].backward + times[i + 1].backward;
    if (forward.s() <= 0) continue;
    times[i].backward = backward * (times[i].forward / forward);
    times[i + 1].backward = backward - times[i].backward;
  }
  for (size_t i = 0; i < block.rows.size(); ++i) {
    if (is_compute_row(block.rows[i]) &&
        times[i].backward < times[i].forward * kMissingBackwardFraction) {
      times[i].backward = times[i].forward * backward_ratio(ops[i]);
      times[i].backward_estimated = true;
    }
  }
  return times;
}

// Roofline time of one layer at `batch`, used only as a weight to apportion a row.
double split_weight(const Graph& graph, LayerId id, int64_t batch) {
  const graph::LayerInfo& info = graph.info(id);
  double bytes = 0;
  for (const LayerId in : graph.inputs(id)) bytes += static_cast<double>(graph.info(in).output_bytes);
  bytes = (bytes + static_cast<double>(info.output_bytes)) * static_cast<double>(batch) +
          4.0 * static_cast<double>(info.params);
  const double flops = static_cast<double>(info.forward_flops) * static_cast<double>(batch);
  return std::max(flops / kSplitFlopsPerSecond, bytes / kSplitBytesPerSecond);
}

// ---- Candidates and the choice --------------------------------------------------------

struct Candidate {
  Provenance provenance = Provenance::Measured;
  int priority = 0;
  Seconds forward;
  Seconds backward;
};

// A row, or one layer's part of a row that times several layers.
using CandidateId = std::tuple<size_t, size_t, size_t, size_t>;  // source, block, row, part

struct LayerWork {
  std::string op;
  int64_t forward_flops = 0;
  int64_t input_bytes = 0;
  int64_t output_bytes = 0;
  int64_t params = 0;
};

struct Loaded {
  SourceSpec spec;
  File file;
  std::vector<std::vector<std::string>> keys;  // per block, per row
  std::vector<std::vector<RowTime>> times;
  std::set<std::pair<size_t, size_t>> matched;  // (block, row)
};

class Importer {
 public:
  explicit Importer(std::vector<Loaded> sources) : sources_(std::move(sources)) {
    for (size_t s = 0; s < sources_.size(); ++s) {
      const Loaded& source = sources_[s];
      for (size_t b = 0; b < source.file.blocks.size(); ++b) {
        if (source.file.blocks[b].batch < source.spec.min_batch) continue;
        for (size_t r = 0; r < source.file.blocks[b].rows.size(); ++r) {
          index_[source.keys[b][r]].push_back({s, b, r});
        }
      }
    }
  }

  ModelCoverage add_model(const std::string& spec) {
    const Graph graph = graph::load_model(spec);
    std::vector<std::string> signatures(graph.size());
    for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
      signatures[static_cast<size_t>(id)] = graph::layer_signature(graph, id);
    }
    for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
      const auto key = layer_key(graph, id);
      if (key) match_layer(graph, signatures, id, *key);
      if (auto block = bottleneck_ending_at(graph, id)) match_block(graph, signatures, *block);
    }
    ModelCoverage coverage;
    coverage.model = spec;
    for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
      if (graph.layer(id).op() == OpKind::Input) continue;
      const std::string& signature = signatures[static_cast<size_t>(id)];
      if (work_.count(signature) == 0) {
        work_[signature] = work_of(graph, id);
        order_.push_back(signature);
      }
      coverage.layers.push_back({id, graph.layer(id).name, graph::op_name(graph.layer(id).op()),
                                 signature, {}});
    }
    return coverage;
  }

  // One entry per (signature, batch): the candidates of the best class (measured before
  // derived, then by source priority), averaged. A derived value between two measured
  // batches of its signature is dropped: it comes from another kind of measurement (a
  // block's share), and next to the measured neighbours it would make the layer's time
  // jump up and down with the batch (interpolating the neighbours is better).
  // Long: the selection rule above, applied to every (signature, batch) in one pass.
  ImportResult finish(std::vector<ModelCoverage> models) {
    ImportResult result;
    std::map<std::string, std::map<int64_t, Provenance>> chosen;
    for (const std::string& signature : order_) {
      const auto found = candidates_.find(signature);
      if (found == candidates_.end()) continue;
      std::map<int64_t, std::pair<Provenance, int>> best_of;  // batch -> best class
      for (const auto& [batch, by_id] : found->second) {
        std::pair<Provenance, int> best{Provenance::Derived, 1 << 30};
        for (const auto& [id, candidate] : by_id) {
          best = std::min(best, std::pair{candidate.provenance, candidate.priority});
        }
        best_of[batch] = best;
      }
      std::vector<int64_t> measured;
      for (const auto& [batch, best] : best_of) {
        if (best.first == Provenance::Measured) measured.push_back(batch);
      }
      for (const auto& [batch, by_id] : found->second) {
        const std::pair<Provenance, int> best = best_of.at(batch);
        if (best.first == Provenance::Derived && !measured.empty() && measured.front() < batch &&
            batch < measured.back()) {
          ++result.derived_dropped;
          continue;
        }
        Seconds forward, backward;
        int count = 0;
        for (const auto& [id, candidate] : by_id) {
          if (std::pair{candidate.provenance, candidate.priority} != best) continue;
          forward += candidate.forward;
          backward += candidate.backward;
          ++count;
          sources_[std::get<0>(id)].matched.insert({std::get<1>(id), std::get<2>(id)});
        }
        const LayerWork& work = work_.at(signature);
        cost::ProfileEntry entry;
        entry.signature = signature;
        entry.op = work.op;
        entry.batch = batch;
        entry.forward = round_ns(forward / count);
        entry.backward = round_ns(backward / count);
        entry.forward_flops_per_sample = work.forward_flops;
        entry.input_bytes_per_sample = work.input_bytes;
        entry.output_bytes_per_sample = work.output_bytes;
        entry.params = work.params;
        result.profile.entries.push_back(std::move(entry));
        result.provenance.push_back(best.first);
        chosen[signature][batch] = best.first;
      }
    }
    for (ModelCoverage& model : models) {
      for (LayerCoverage& layer : model.layers) {
        const auto found = chosen.find(layer.signature);
        if (found != chosen.end()) layer.batches = found->second;
      }
    }
    result.models = std::move(models);
    for (const Loaded& source : sources_) result.sources.push_back(summary(source));
    return result;
  }

 private:
  // Rounded to whole nanoseconds, built so that ms() gives back the short decimal (the
  // profile file stores milliseconds).
  static Seconds round_ns(Seconds time) { return Seconds(std::round(time.ms() * 1e6) / 1e6 / 1e3); }

  static LayerWork work_of(const Graph& graph, LayerId id) {
    LayerWork work;
    work.op = graph::op_name(graph.layer(id).op());
    const graph::LayerInfo& info = graph.info(id);
    work.forward_flops = info.forward_flops;
    for (const LayerId in : graph.inputs(id)) work.input_bytes += graph.info(in).output_bytes;
    work.output_bytes = info.output_bytes;
    work.params = info.params;
    return work;
  }

  void add(const Graph& graph, const std::string& signature, LayerId id, int64_t batch,
           const CandidateId& candidate_id, const Candidate& candidate) {
    if (work_.count(signature) == 0) {
      work_[signature] = work_of(graph, id);
      order_.push_back(signature);
    }
    candidates_[signature][batch].emplace(candidate_id, candidate);
  }

  void match_layer(const Graph& graph, const std::vector<std::string>& signatures, LayerId id,
                   const std::string& key) {
    const auto rows = index_.find(key);
    if (rows == index_.end()) return;
    // The relu that a fused row also covers: the layer's only consumer, a relu.
    std::optional<LayerId> relu;
    if ((is_op(graph, id, OpKind::Conv2d) || is_op(graph, id, OpKind::Linear)) &&
        graph.consumers(id).size() == 1 && is_op(graph, graph.consumers(id)[0], OpKind::Relu)) {
      relu = graph.consumers(id)[0];
    }
    for (const auto& [s, b, r] : rows->second) {
      const Loaded& source = sources_[s];
      const Row& row = source.file.blocks[b].rows[r];
      const RowTime& time = source.times[b][r];
      if (source.spec.row_includes_next_relu && relu) {
        // The row's total, split between the layer and its relu by roofline weight; each
        // part's forward/backward by the op's ratio.
        const double w_layer = split_weight(graph, id, row.batch);
        const double w_relu = split_weight(graph, *relu, row.batch);
        const LayerId parts[] = {id, *relu};
        const double shares[] = {w_layer / (w_layer + w_relu), w_relu / (w_layer + w_relu)};
        for (size_t part = 0; part < 2; ++part) {
          const Seconds total = row.total * shares[part];
          const Seconds forward =
              total / (1 + backward_ratio(graph::op_name(graph.layer(parts[part]).op())));
          add(graph, signatures[static_cast<size_t>(parts[part])], parts[part], row.batch,
              {s, b, r, part},
              {Provenance::Derived, source.spec.priority, forward, total - forward});
        }
        continue;
      }
      add(graph, signatures[static_cast<size_t>(id)], id, row.batch, {s, b, r, 0},
          {time.backward_estimated ? Provenance::Derived : Provenance::Measured,
           source.spec.priority, time.forward, time.backward});
    }
  }

  void match_block(const Graph& graph, const std::vector<std::string>& signatures,
                   const Bottleneck& block) {
    const auto rows = index_.find(block.key);
    if (rows == index_.end()) return;
    for (const auto& [s, b, r] : rows->second) {
      const Loaded& source = sources_[s];
      const Row& row = source.file.blocks[b].rows[r];
      const RowTime& time = source.times[b][r];
      std::vector<double> weights;
      double sum = 0;
      for (const LayerId id : block.layers) sum += weights.emplace_back(split_weight(graph, id, row.batch));
      for (size_t part = 0; part < block.layers.size(); ++part) {
        const LayerId id = block.layers[part];
        const double share = weights[part] / sum;
        add(graph, signatures[static_cast<size_t>(id)], id, row.batch, {s, b, r, part},
            {Provenance::Derived, source.spec.priority, time.forward * share, time.backward * share});
      }
    }
  }

  static SourceSummary summary(const Loaded& source) {
    SourceSummary summary;
    summary.file = source.file.name;
    std::set<int64_t> batches;
    for (size_t b = 0; b < source.file.blocks.size(); ++b) {
      const Block& block = source.file.blocks[b];
      ++summary.blocks;
      summary.rows += static_cast<int>(block.rows.size());
      if (block.batch < source.spec.min_batch) {
        summary.rows_below_min_batch += static_cast<int>(block.rows.size());
      }
      if (!block.rows.empty()) batches.insert(block.batch);
      const double rows_ms = block.row_total().ms();
      const double error = block.sum_ms > 0 ? std::abs(rows_ms - block.sum_ms) / block.sum_ms
                                            : (rows_ms > 0 ? 1.0 : 0.0);
      summary.max_sum_error = std::max(summary.max_sum_error, error);
    }
    summary.rows_matched = static_cast<int>(source.matched.size());
    summary.batches.assign(batches.begin(), batches.end());
    return summary;
  }

  std::vector<Loaded> sources_;
  std::map<std::string, std::vector<std::tuple<size_t, size_t, size_t>>> index_;
  std::map<std::string, std::map<int64_t, std::map<CandidateId, Candidate>>> candidates_;
  std::map<std::string, LayerWork> work_;
  std::vector<std::string> order_;  // signatures in order of first appearance
};

Loaded load_source(const std::string& data_dir, const SourceSpec& spec) {
  Loaded source;
  source.spec = spec;
  source.file = parse_file(data_dir + "/" + spec.file);
  for (const Block& block : source.file.blocks) {
    std::vector<std::string> keys, ops;
    for (const Row& row : block.rows) {
      keys.push_back(row_key(row, source.file.name));  // validates every row, used or not
      ops.push_back(keys.back().substr(0, keys.back().find('{')));
    }
    source.times.push_back(block_times(source.file, block, ops));
    source.keys.push_back(std::move(keys));
  }
  return source;
}

// "1-4,6,8,16,32,59-64"
std::string batch_list(const std::vector<int64_t>& batches) {
  std::string text;
  for (size_t i = 0; i < batches.size();) {
    size_t j = i;
    while (j + 1 < batches.size() && batches[j + 1] == batches[j] + 1) ++j;
    if (!text.empty()) text += ",";
    if (j >= i + 2) {
      text += fmt::format("{}-{}", batches[i], batches[j]);
    } else {
      text += std::to_string(batches[i]);
      if (j == i + 1) text += "," + std::to_string(batches[j]);
    }
    i = j + 1;
  }
  return text.empty() ? "-" : text;
}

}  // namespace

ImportResult import_deeppool(const std::string& data_dir, const std::vector<std::string>& models,
                             const std::vector<SourceSpec>& sources) {
  std::vector<Loaded> loaded;
  for (const SourceSpec& spec : sources) loaded.push_back(load_source(data_dir, spec));
  Importer importer(std::move(loaded));
  std::vector<ModelCoverage> coverage;
  for (const std::string& model : models) coverage.push_back(importer.add_model(model));
  ImportResult result = importer.finish(std::move(coverage));
  result.profile.device = "a100";
  result.profile.description =
      "NVIDIA A100, PyTorch (DeepPool's runtime, early 2022): per-layer forward and backward "
      "times per per-device batch. Measured entries come from one DeepPool row each; in the "
      ".prof files a conv2d/linear backward recorded on the following ReLU row is shared "
      "between the two in proportion to their forwards, and the .txt totals are split with "
      "fixed backward/forward ratios (conv2d 2.2, linear 2.0, maxpool2d 3.6, avgpool2d 3.1, "
      "relu 1.5, others 1.0). Derived entries: ResnetBottleneck rows and the conv+ReLU rows of "
      "vggLayerGpuProfileA100.txt split over their layers in proportion to "
      "max(FLOPs / 60 TFLOP/s, bytes / 1.4 TB/s); conv2d/linear rows without a backward get "
      "2.2/2.0 x forward. Per (signature, batch): measured before derived, then "
      ".prof > V2 tables > V1 tables (V1 only at batch >= 64), averaged over duplicate rows. "
      "See docs/a100-profile.md.";
  result.profile.source =
      "DeepPool (S. J. Park, J. Fried, S. Kim, M. Alizadeh, A. Belay: Efficient Strong Scaling "
      "Through Burst Parallel Training, MLSys 2022), github.com/DeepPoolML/DeepPool commit "
      "7f823f2, MIT License, Copyright (c) 2021 Seo Jin Park. Converted by "
      "'burst import-deeppool' from data/deeppool-a100.";
  result.profile.index();
  return result;
}

void print_match_report(const ImportResult& result, std::ostream& out) {
  size_t measured = 0;
  for (const Provenance provenance : result.provenance) measured += provenance == Provenance::Measured;
  out << fmt::format("{} profile entries: {} measured, {} derived ({} derived values between "
                     "measured batches of their signature left out)\n\n",
                     result.profile.entries.size(), measured,
                     result.profile.entries.size() - measured, result.derived_dropped);

  using Align = TextTable::Align;
  TextTable sources({{"source", Align::Left},
                     {"batches", Align::Left},
                     {"blocks", Align::Right},
                     {"rows", Align::Right},
                     {"skipped (batch)", Align::Right},
                     {"used", Align::Right},
                     {"sum check", Align::Right}});
  for (const SourceSummary& source : result.sources) {
    sources.add_row({source.file, batch_list(source.batches), std::to_string(source.blocks),
                     std::to_string(source.rows), std::to_string(source.rows_below_min_batch),
                     std::to_string(source.rows_matched),
                     fmt::format("{:.3f}%", 100 * source.max_sum_error)});
  }
  sources.print(out);
  out << "(sum check: largest |sum of a block's rows - its sum line| / sum line)\n";

  for (const ModelCoverage& model : result.models) {
    size_t with_measured = 0, derived_only = 0;
    TextTable matched({{"layer", Align::Left},
                       {"op", Align::Left},
                       {"measured batches", Align::Left},
                       {"derived batches", Align::Left}});
    TextTable missing({{"layer", Align::Left}, {"signature", Align::Left}});
    for (const LayerCoverage& layer : model.layers) {
      std::vector<int64_t> measured_batches, derived_batches;
      for (const auto& [batch, provenance] : layer.batches) {
        (provenance == Provenance::Measured ? measured_batches : derived_batches).push_back(batch);
      }
      if (layer.batches.empty()) {
        missing.add_row({layer.name, layer.signature});
        continue;
      }
      (measured_batches.empty() ? derived_only : with_measured) += 1;
      matched.add_row({layer.name, layer.op, batch_list(measured_batches), batch_list(derived_batches)});
    }
    out << fmt::format("\nmodel {}: {} layers; {} with measured data, {} with derived data only, "
                       "{} without data\n",
                       model.model, model.layers.size(), with_measured, derived_only,
                       model.layers.size() - with_measured - derived_only);
    if (with_measured + derived_only > 0) matched.print(out);
    if (with_measured + derived_only < model.layers.size()) {
      out << "without data:\n";
      missing.print(out);
    }
  }
}

}  // namespace burst::deeppool
