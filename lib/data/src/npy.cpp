#include "npy.h"

#include <cstring>
#include <regex>

#include <fmt/format.h>

#include "burst/util/checked_math.h"
#include "burst/util/error.h"

namespace burst::data::detail {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;

// Where the dict ends and the elements start, from the version's header-length field.
size_t header_end(const MappedFile& file, std::string* header) {
  const uint8_t* bytes = file.data();
  if (file.size() < kMagicBytes + 4 || std::memcmp(bytes, kMagic, kMagicBytes) != 0) {
    throw UserError(fmt::format("'{}' is not a .npy file (no \\x93NUMPY magic at its start)", file.path()));
  }
  const uint8_t major = bytes[6];
  size_t length = 0;
  size_t start = 0;
  if (major == 1) {
    length = static_cast<size_t>(bytes[8]) | static_cast<size_t>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12) throw UserError(fmt::format("'{}': the .npy header is cut short", file.path()));
    length = static_cast<size_t>(bytes[8]) | static_cast<size_t>(bytes[9]) << 8 |
             static_cast<size_t>(bytes[10]) << 16 | static_cast<size_t>(bytes[11]) << 24;
    start = 12;
  } else {
    throw UserError(fmt::format("'{}': .npy version {} is not 1, 2 or 3", file.path(), major));
  }
  if (start + length > file.size()) {
    throw UserError(fmt::format("'{}': the .npy header declares {} bytes but the file has {}", file.path(), length,
                                file.size() - start));
  }
  header->assign(reinterpret_cast<const char*>(bytes + start), length);
  return start + length;
}

std::string dict_value(const std::string& header, const std::string& key, const std::string& pattern,
                       const std::string& path) {
  std::smatch match;
  if (!std::regex_search(header, match, std::regex("'" + key + "'\\s*:\\s*" + pattern))) {
    throw UserError(fmt::format("'{}': the .npy header has no readable '{}' ({})", path, key, header));
  }
  return match[1].str();
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& path) {
  std::vector<int64_t> shape;
  const std::regex number("\\d+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
    const std::string digits = it->str();
    if (digits.size() > 18) throw UserError(fmt::format("'{}': a .npy dimension {} is too large", path, digits));
    shape.push_back(std::stoll(digits));
  }
  return shape;
}

int64_t element_bytes_of(const std::string& descr, const std::string& path) {
  static const std::regex form("[<|=]([fiub])(\\d+)");
  std::smatch match;
  if (!std::regex_match(descr, match, form)) {
    throw UserError(fmt::format("'{}': element type '{}' is not a little-endian number", path, descr));
  }
  return std::stoll(match[2].str());
}

}  // namespace

NpyArray parse_npy(const MappedFile& file) {
  std::string header;
  const size_t data_start = header_end(file, &header);
  NpyArray array;
  array.descr = dict_value(header, "descr", "'([^']*)'", file.path());
  if (dict_value(header, "fortran_order", "(True|False)", file.path()) == "True") {
    throw UserError(fmt::format("'{}' is in Fortran order; save it in C order (numpy.ascontiguousarray)", file.path()));
  }
  array.shape = parse_shape(dict_value(header, "shape", "\\(([^)]*)\\)", file.path()), file.path());
  array.element_bytes = element_bytes_of(array.descr, file.path());
  int64_t elements = 1;
  for (const int64_t extent : array.shape) {
    const std::optional<int64_t> product = checked_mul(elements, extent);
    if (!product) throw UserError(fmt::format("'{}': the .npy shape overflows", file.path()));
    elements = *product;
  }
  const std::optional<int64_t> bytes = checked_mul(elements, array.element_bytes);
  const int64_t have = static_cast<int64_t>(file.size() - data_start);
  if (!bytes || *bytes != have) {
    throw UserError(fmt::format("'{}' is truncated or padded: its header declares shape ({}) of {} ({} bytes) but it "
                                "holds {} bytes",
                                file.path(), fmt::join(array.shape, ", "), array.descr,
                                bytes ? fmt::format("{}", *bytes) : std::string("too many"), have));
  }
  array.elements = elements;
  array.data = file.data() + data_start;
  return array;
}

}  // namespace burst::data::detail
