#include "burst/checkpoint/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <fmt/format.h>

#include "burst/graph/model_json.h"
#include "burst/util/error.h"
#include "burst/util/hash.h"
#include "burst/util/json_io.h"

namespace burst::checkpoint {
namespace {

constexpr char kMagic[8] = {'B', 'U', 'R', 'S', 'T', 'C', 'K', 'P'};
constexpr size_t kPreamble = 8 + 4 + 8;  // magic, version, header length
constexpr size_t kTrailer = 4;           // CRC-32

uint32_t crc_of(const char* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {  // zlib takes a uInt length
    const auto chunk = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    size -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

template <typename Integer>
void put(std::string& out, Integer value) {
  for (size_t i = 0; i < sizeof(Integer); ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

template <typename Integer>
Integer get(const std::string& in, size_t at) {
  Integer value = 0;
  for (size_t i = 0; i < sizeof(Integer); ++i) {
    value |= static_cast<Integer>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  }
  return value;
}

int64_t element_count(const std::vector<int64_t>& shape, const std::string& name) {
  int64_t count = 1;
  for (const int64_t extent : shape) {
    if (extent < 0 || (extent > 0 && count > INT64_MAX / extent)) {
      throw UserError(fmt::format("tensor '{}' has a bad shape", name));
    }
    count *= extent;
  }
  return count;
}

// The header's tensor list, checked against the payload's size.
std::vector<TensorBytes> read_tensors(const nlohmann::json& list, const std::string& bytes, size_t payload_begin,
                                      size_t payload_size) {
  if (!list.is_array()) throw UserError("corrupt header: 'tensors' is not a list");
  std::vector<TensorBytes> tensors;
  std::set<std::string> names;
  uint64_t expected_offset = 0;
  for (const nlohmann::json& entry : list) {
    JsonObjectReader reader(entry, "corrupt header: tensor");
    TensorBytes tensor;
    tensor.name = reader.get_string("name");
    tensor.dtype = reader.get_string("dtype");
    const nlohmann::json& shape = reader.require("shape");
    if (!shape.is_array()) reader.fail("shape", "must be a list");
    for (const nlohmann::json& extent : shape) tensor.shape.push_back(reader.as_int("shape", extent));
    const int64_t offset_value = reader.get_int("offset"), size_value = reader.get_int("bytes");
    const int64_t crc_value = reader.get_int("crc32");
    if (offset_value < 0 || size_value < 0 || crc_value < 0 || crc_value > 0xffffffffLL) {
      throw UserError(fmt::format("corrupt header: tensor '{}' has a negative size or a bad checksum", tensor.name));
    }
    const auto offset = static_cast<uint64_t>(offset_value), size = static_cast<uint64_t>(size_value);
    const auto crc = static_cast<uint32_t>(crc_value);
    if (!names.insert(tensor.name).second) throw UserError(fmt::format("corrupt header: tensor '{}' twice", tensor.name));
    if (offset != expected_offset || size > payload_size - offset) {
      throw UserError(fmt::format("corrupt header: tensor '{}' at bytes [{}, {}) of a {}-byte payload", tensor.name,
                                  offset, offset + size, payload_size));
    }
    if (static_cast<uint64_t>(element_count(tensor.shape, tensor.name) * dtype_size(tensor.dtype)) != size) {
      throw UserError(fmt::format("corrupt header: tensor '{}' has {} bytes for its {} shape", tensor.name, size,
                                  tensor.dtype));
    }
    tensor.bytes = bytes.substr(payload_begin + offset, size);
    if (crc_of(tensor.bytes.data(), tensor.bytes.size()) != crc) {
      throw UserError(fmt::format("corrupt: tensor '{}' does not match its checksum", tensor.name));
    }
    expected_offset = offset + size;
    tensors.push_back(std::move(tensor));
  }
  if (expected_offset != payload_size) {
    throw UserError(fmt::format("corrupt header: its tensors cover {} of the payload's {} bytes", expected_offset,
                                payload_size));
  }
  return tensors;
}

}  // namespace

int64_t dtype_size(const std::string& dtype) {
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "float64" || dtype == "int64") return 8;
  if (dtype == "uint8") return 1;
  throw UserError(fmt::format("unknown tensor dtype '{}' (checkpoints hold float32, float64, int64, int32, uint8)",
                              text_excerpt(dtype)));
}

std::string model_fingerprint(const graph::Graph& graph) { return util::fnv1a_hex(graph::model_to_json(graph).dump()); }

std::string encode_checkpoint(const Checkpoint& checkpoint) {
  nlohmann::json tensors = nlohmann::json::array();
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorBytes& tensor : checkpoint.tensors) {
    if (!names.insert(tensor.name).second) throw UserError(fmt::format("checkpoint tensor '{}' given twice", tensor.name));
    const int64_t expected = element_count(tensor.shape, tensor.name) * dtype_size(tensor.dtype);
    if (static_cast<int64_t>(tensor.bytes.size()) != expected) {
      throw UserError(fmt::format("checkpoint tensor '{}' has {} bytes, its {} shape needs {}", tensor.name,
                                  tensor.bytes.size(), tensor.dtype, expected));
    }
    tensors.push_back({{"name", tensor.name},
                       {"dtype", tensor.dtype},
                       {"shape", tensor.shape},
                       {"offset", offset},
                       {"bytes", tensor.bytes.size()},
                       {"crc32", crc_of(tensor.bytes.data(), tensor.bytes.size())}});
    offset += tensor.bytes.size();
  }
  const nlohmann::json header = {{"format", kCheckpointFormat},
                                 {"version", kCheckpointFormatVersion},
                                 {"model", checkpoint.model},
                                 {"model_fingerprint", checkpoint.model_fingerprint},
                                 {"step", checkpoint.step},
                                 {"state", checkpoint.state},
                                 {"tensors", std::move(tensors)}};
  const std::string header_text = header.dump();
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kCheckpointFormatVersion);
  put<uint64_t>(out, header_text.size());
  out += header_text;
  out.reserve(out.size() + offset + kTrailer);
  for (const TensorBytes& tensor : checkpoint.tensors) out += tensor.bytes;
  put<uint32_t>(out, crc_of(out.data(), out.size()));
  return out;
}

Checkpoint decode_checkpoint(const std::string& bytes) {
  if (bytes.size() < kPreamble + kTrailer) {
    throw UserError(fmt::format("truncated: {} bytes, a checkpoint has at least {}", bytes.size(), kPreamble + kTrailer));
  }
  if (bytes.compare(0, sizeof(kMagic), kMagic, sizeof(kMagic)) != 0) {
    throw UserError("not a burst checkpoint (it does not start with BURSTCKP)");
  }
  const auto version = get<uint32_t>(bytes, 8);
  if (version != kCheckpointFormatVersion) {
    throw UserError(fmt::format("format version {}; this burst reads version {}", version, kCheckpointFormatVersion));
  }
  const auto header_size = get<uint64_t>(bytes, 12);
  if (header_size > bytes.size() - kPreamble - kTrailer) {
    throw UserError(fmt::format("truncated: a {}-byte header in a {}-byte file", header_size, bytes.size()));
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(kPreamble, header_size));
  } catch (const nlohmann::json::exception&) {
    throw UserError("corrupt: the header is not JSON");
  }
  // The whole-file checksum first: a flipped bit anywhere (header included) is caught here.
  uint64_t payload_size = 0;
  if (header.is_object() && header.contains("tensors") && header["tensors"].is_array()) {
    for (const nlohmann::json& entry : header["tensors"]) {
      if (entry.is_object() && entry.contains("bytes") && entry["bytes"].is_number_unsigned()) {
        payload_size += entry["bytes"].get<uint64_t>();
      }
    }
  }
  const uint64_t expected_size = kPreamble + header_size + payload_size + kTrailer;
  if (bytes.size() < expected_size) {
    throw UserError(fmt::format("truncated: {} bytes of {}", bytes.size(), expected_size));
  }
  if (bytes.size() > expected_size) {
    throw UserError(fmt::format("corrupt: {} bytes where the header describes {}", bytes.size(), expected_size));
  }
  const size_t body = bytes.size() - kTrailer;
  const uint32_t stored = get<uint32_t>(bytes, body), computed = crc_of(bytes.data(), body);
  if (stored != computed) {
    throw UserError(fmt::format("corrupt: checksum {:08x} does not match the contents ({:08x})", stored, computed));
  }
  try {
    JsonObjectReader reader(header, "corrupt header");
    check_format(reader, kCheckpointFormat, kCheckpointFormatVersion);
    Checkpoint checkpoint;
    checkpoint.model = reader.get_string("model");
    checkpoint.model_fingerprint = reader.get_string("model_fingerprint");
    checkpoint.step = reader.get_int("step");
    checkpoint.state = reader.require("state");
    checkpoint.tensors = read_tensors(reader.require("tensors"), bytes, kPreamble + header_size, payload_size);
    if (checkpoint.step < 0) throw UserError(fmt::format("corrupt header: step {}", checkpoint.step));
    return checkpoint;
  } catch (const nlohmann::json::exception& error) {
    throw UserError(fmt::format("corrupt header: {}", error.what()));
  }
}

void write_checkpoint_file(const Checkpoint& checkpoint, const std::string& path) {
  const std::string bytes = encode_checkpoint(checkpoint);
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(fmt::format("cannot write '{}': {}", temporary, std::strerror(errno)));
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      std::remove(temporary.c_str());
      throw UserError(fmt::format("error while writing '{}': {}", temporary, reason));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    throw UserError(fmt::format("cannot flush '{}': {}", temporary, reason));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    throw UserError(fmt::format("cannot rename '{}' to '{}': {}", temporary, path, reason));
  }
  // The rename itself is durable once the directory is flushed.
  std::string directory = std::filesystem::path(path).parent_path().string();
  if (directory.empty()) directory = ".";
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

Checkpoint read_checkpoint_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw UserError(fmt::format("cannot read checkpoint '{}': {}", path, std::strerror(errno)));
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  try {
    return decode_checkpoint(bytes);
  } catch (const UserError& error) {
    throw UserError(fmt::format("checkpoint '{}': {}", path, error.what()));
  }
}

void check_checkpoint_model(const Checkpoint& checkpoint, const graph::Graph& graph, const std::string& path) {
  const std::string fingerprint = model_fingerprint(graph);
  if (checkpoint.model != graph.name() || checkpoint.model_fingerprint != fingerprint) {
    throw UserError(fmt::format("checkpoint '{}' is for model {} (fingerprint {}), not {} (fingerprint {})", path,
                                checkpoint.model, checkpoint.model_fingerprint, graph.name(), fingerprint));
  }
}

std::string checkpoint_path(const std::string& directory, int64_t step) {
  return (std::filesystem::path(directory) / fmt::format("step-{:09d}.ckpt", step)).string();
}

std::optional<std::string> latest_checkpoint(const std::string& directory) {
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) return std::nullopt;
  const std::string prefix = "step-", suffix = ".ckpt";
  std::optional<std::string> best;
  int64_t best_step = -1;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    // step-<9 to 18 digits>.ckpt, nothing else (not *.ckpt.tmp)
    if (name.size() < prefix.size() + 9 + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const int64_t step = std::stoll(digits);
    if (step > best_step) {
      best_step = step;
      best = entry.path().string();
    }
  }
  return best;
}

}  // namespace burst::checkpoint
