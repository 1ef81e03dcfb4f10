// Reading IDX files through zlib's gz* interface, which inflates gzip and passes plain
// files through unchanged.
#include "burst/data/idx.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

#include "burst/util/checked_math.h"
#include "burst/util/error.h"

namespace burst::data {
namespace {

constexpr uint8_t kUnsignedByteType = 0x08;

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
  throw UserError(fmt::format("IDX file '{}': {}", path, reason));
}

// zlib's complaint about the stream ("unexpected end of file", "incorrect data check"),
// or an empty string when the stream is fine so far.
std::string gzip_problem(gzFile_s* file, const std::string& path) {
  int code = Z_OK;
  const char* message = gzerror(file, &code);
  if (code == Z_OK || code == Z_STREAM_END) return "";
  if (code == Z_ERRNO) return std::strerror(errno);
  if (message == nullptr) return fmt::format("zlib error {}", code);
  std::string text = message;
  // zlib writes "<path>: <reason>"; our messages name the path once, up front.
  const std::string path_prefix = path + ": ";
  if (text.compare(0, path_prefix.size(), path_prefix) == 0) text.erase(0, path_prefix.size());
  return text;
}

// Fails with zlib's complaint: a read error of the file, or a corrupt gzip stream.
[[noreturn]] void fail_stream(gzFile_s* file, const std::string& path) {
  int code = Z_OK;
  gzerror(file, &code);
  fail(path,
       (code == Z_ERRNO ? "cannot read: " : "cannot decompress: ") + gzip_problem(file, path));
}

// Reads up to `size` bytes; returns how many arrived (fewer only at the end of the data).
// A gzip error (corrupt stream) throws; a cut-off stream just reads short.
int64_t read_some(gzFile_s* file, const std::string& path, uint8_t* out, int64_t size) {
  int64_t done = 0;
  while (done < size) {
    const int64_t chunk = std::min<int64_t>(size - done, INT_MAX / 2);
    const int got = gzread(file, out + done, static_cast<unsigned>(chunk));
    if (got < 0) fail_stream(file, path);
    if (got == 0) break;
    done += got;
  }
  return done;
}

// Reads exactly `size` bytes of `what`, or fails with "truncated" and zlib's reason.
void read_exact(gzFile_s* file, const std::string& path, uint8_t* out, int64_t size,
                const std::string& what) {
  const int64_t got = read_some(file, path, out, size);
  if (got == size) return;
  const std::string problem = gzip_problem(file, path);
  fail(path, fmt::format("truncated: expected {} bytes of {}, found {}{}", size, what, got,
                         problem.empty() ? "" : " (" + problem + ")"));
}

uint32_t big_endian_u32(const uint8_t* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

}  // namespace

IdxArray read_idx_file(const std::string& path) {
  errno = 0;
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) {
    fail(path, fmt::format("cannot open: {}", errno != 0 ? std::strerror(errno) : "out of memory"));
  }
  gzbuffer(file.get(), 1 << 17);  // 128 KiB reads: fewer system calls than the 8 KiB default

  uint8_t magic[4] = {};
  read_exact(file.get(), path, magic, 4, "magic number");
  if (magic[0] != 0 || magic[1] != 0) {
    fail(path, fmt::format("bad magic number 0x{:08x} (an IDX file starts with 00 00, a type "
                           "byte and the number of dimensions)",
                           big_endian_u32(magic)));
  }
  if (magic[2] != kUnsignedByteType) {
    fail(path, fmt::format("element type 0x{:02x} is not supported (only 0x08, unsigned byte)",
                           magic[2]));
  }
  const int rank = magic[3];
  if (rank < 1 || rank > kMaxIdxDimensions) {
    fail(path, fmt::format("{} dimensions declared, expected 1 to {}", rank, kMaxIdxDimensions));
  }

  uint8_t dim_bytes[4 * kMaxIdxDimensions] = {};
  read_exact(file.get(), path, dim_bytes, 4 * rank, "dimension sizes");
  IdxArray array;
  int64_t elements = 1;
  for (int d = 0; d < rank; ++d) {
    const int64_t extent = big_endian_u32(dim_bytes + 4 * d);
    if (extent == 0) fail(path, fmt::format("dimension {} has size 0", d));
    array.dims.push_back(extent);
    // Each extent < 2^32 and the running product stays <= 2^30, so this cannot overflow;
    // checked anyway so the bound is not load-bearing for safety.
    const std::optional<int64_t> product = checked_mul(elements, extent);
    if (!product || *product > kMaxIdxPayloadBytes) {
      fail(path, fmt::format("sizes [{}] declare more than the limit of {} bytes",
                             fmt::join(array.dims, ", "), kMaxIdxPayloadBytes));
    }
    elements = *product;
  }

  array.bytes.resize(static_cast<size_t>(elements));
  read_exact(file.get(), path, array.bytes.data(), elements,
             fmt::format("data for sizes [{}]", fmt::join(array.dims, ", ")));
  // The file must end here. Reading on also makes zlib check the gzip trailer (CRC-32 and
  // length), which it does only on reaching the end of the stream.
  uint8_t extra = 0;
  if (read_some(file.get(), path, &extra, 1) != 0) {
    fail(path, fmt::format("trailing bytes after the {} bytes of data that sizes [{}] declare",
                           elements, fmt::join(array.dims, ", ")));
  }
  if (!gzip_problem(file.get(), path).empty()) fail_stream(file.get(), path);
  return array;
}

Dataset load_idx_dataset(const std::string& name, const std::string& images_path,
                         const std::string& labels_path, int64_t num_classes) {
  BURST_ASSERT(num_classes >= 1 && num_classes <= 256, "byte labels allow 1..256 classes");
  const IdxArray images = read_idx_file(images_path);
  if (images.dims.size() != 3) {
    fail(images_path, fmt::format("an image file has 3 dimensions (count, height, width), this "
                                  "one has {}",
                                  images.dims.size()));
  }
  const IdxArray labels = read_idx_file(labels_path);
  if (labels.dims.size() != 1) {
    fail(labels_path,
         fmt::format("a label file has 1 dimension (count), this one has {}", labels.dims.size()));
  }
  const int64_t count = images.dims[0];
  if (labels.dims[0] != count) {
    throw UserError(fmt::format("IDX files '{}' and '{}' do not match: {} images but {} labels",
                                images_path, labels_path, count, labels.dims[0]));
  }

  std::vector<int64_t> label_values(labels.bytes.size());
  for (size_t i = 0; i < labels.bytes.size(); ++i) {
    if (labels.bytes[i] >= num_classes) {
      fail(labels_path,
           fmt::format("label #{} is {}, expected 0 to {}", i, labels.bytes[i], num_classes - 1));
    }
    label_values[i] = labels.bytes[i];
  }
  std::vector<float> pixels(images.bytes.size());
  for (size_t i = 0; i < images.bytes.size(); ++i) {
    pixels[i] = static_cast<float>(images.bytes[i]) / 255.0f;
  }
  return Dataset(name, {1, images.dims[1], images.dims[2]}, num_classes, std::move(pixels),
                 std::move(label_values));
}

}  // namespace burst::data
