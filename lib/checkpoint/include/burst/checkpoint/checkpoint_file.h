#pragma once
// Checkpoint files (format "burst.checkpoint", version 1; docs/checkpoint-format.md): named
// tensors as raw bytes plus a JSON header with the model's name and fingerprint, the step and
// whatever state the trainer keeps (sampler position, RNG, optimizer settings). libtorch-free:
// the runtime turns tensors into bytes and back.
//
// Layout, all integers little-endian:
//   8 bytes   magic "BURSTCKP"
//   u32       format version (1)
//   u64       header length H
//   H bytes   header, JSON: {"format", "version", "model", "model_fingerprint", "step",
//             "state": {...}, "tensors": [{"name", "dtype", "shape", "offset", "bytes",
//             "crc32"}]} (offsets into the payload)
//   payload   the tensors' bytes, in header order, back to back
//   u32       CRC-32 of everything before it
// Reading checks every part before it returns, so a truncated, bit-flipped or foreign file
// is refused with the reason instead of loading garbage. Writing is atomic: a crash mid-write
// leaves at most a "*.tmp" file beside the last complete checkpoint.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "burst/graph/graph.h"

namespace burst::checkpoint {

inline constexpr const char* kCheckpointFormat = "burst.checkpoint";
inline constexpr uint32_t kCheckpointFormatVersion = 1;

struct TensorBytes {
  std::string name;            // unique within a checkpoint, e.g. "features.0.weight"
  std::string dtype;           // "float32", "float64", "int64", "int32" or "uint8"
  std::vector<int64_t> shape;  // empty for a scalar
  std::string bytes;           // numel x element size, in the machine's (little-endian) order
};

struct Checkpoint {
  std::string model;              // the model's name
  std::string model_fingerprint;  // model_fingerprint() of the graph it was written for
  int64_t step = 0;               // training steps done
  nlohmann::json state = nlohmann::json::object();  // the trainer's own fields
  std::vector<TensorBytes> tensors;
};

// Bytes per element of `dtype`; UserError for a dtype checkpoints do not hold.
int64_t dtype_size(const std::string& dtype);


// A stable hash of the model's structure (its canonical model JSON: layers, ops, attributes,
// shapes): 16 hex digits. Equal graphs give equal fingerprints on every machine.
std::string model_fingerprint(const graph::Graph& graph);

// The file's bytes; UserError for a tensor whose bytes do not match its dtype and shape, or
// a name used twice.
std::string encode_checkpoint(const Checkpoint& checkpoint);
// Parses and checks the bytes of a checkpoint; UserError with the reason ("truncated: ...",
// "not a burst checkpoint", "format version 2; this burst reads version 1", "corrupt: ...").
Checkpoint decode_checkpoint(const std::string& bytes);

// Writes atomically: PATH.tmp, flushed to disk, then renamed over PATH (and the directory
// flushed). UserError on I/O failure.
void write_checkpoint_file(const Checkpoint& checkpoint, const std::string& path);
// Reads and checks a checkpoint file; errors name the path.
Checkpoint read_checkpoint_file(const std::string& path);

// UserError unless `checkpoint` was written for `graph` (same name and fingerprint).
void check_checkpoint_model(const Checkpoint& checkpoint, const graph::Graph& graph, const std::string& path);

// Checkpoints in a directory: DIR/step-000000120.ckpt for step 120.
std::string checkpoint_path(const std::string& directory, int64_t step);
// The checkpoint of the highest step in `directory` (ignoring *.tmp and other files);
// nullopt when there is none or the directory does not exist.
std::optional<std::string> latest_checkpoint(const std::string& directory);

}  // namespace burst::checkpoint
