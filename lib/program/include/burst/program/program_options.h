#pragma once
// What shapes a training step: the one set of options every consumer of a step program
// takes as it is. The program builder reads it; the evaluator, the simulator, the planners
// and the runtime embed it (EvaluateOptions::program, SimOptions::program,
// BurstOptions::program, ExecutorOptions::program, TrainConfig::program) and pass it on
// without translating it field by field. A new knob (precision, recomputation, sharding)
// is a field here, with its default here, and nowhere else. No libtorch.
#include <string>

namespace burst::program {

struct ProgramOptions {
  // Gradient buckets close at this many bytes, or with their group's last layer (DDP's
  // bucket_cap_mb: 25 MiB by default). A positive finite number.
  double bucket_bytes = 25.0 * 1024 * 1024;
  // A group's first bucket in backward order (DDP's _DEFAULT_FIRST_BUCKET_BYTES): small, so
  // the first all-reduce overlaps most of backward. Capped at bucket_bytes.
  double first_bucket_bytes = 1024.0 * 1024;
  // BatchNorm statistics all-reduced among a layer's ranks (burst's runtime: the one-device
  // result); false: each rank normalises with its own samples' statistics (DDP, DeepPool).
  bool sync_batchnorm = true;
};

constexpr double kBytesPerMiB = 1024.0 * 1024;

// Throws UserError naming the field and its value when an option is out of range.
void check_program_options(const ProgramOptions& options);

// "sync" or "local": the command line's --batchnorm words, and reports'.
const char* batchnorm_mode_name(const ProgramOptions& options);
// Parses --batchnorm's word into options.sync_batchnorm; UserError for another word.
void set_batchnorm_mode(ProgramOptions& options, const std::string& mode);

}  // namespace burst::program
