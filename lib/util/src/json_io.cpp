#include "burst/util/json_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst {

using nlohmann::json;

namespace {
constexpr int kMaxNestingDepth = 64;
constexpr size_t kExcerptLength = 40;
}  // namespace

json parse_json_text(const std::string& text) {
  try {
    // The callback sees every nesting level: refuse pathological depth before building it.
    return json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxNestingDepth) {
        throw UserError(fmt::format("JSON nesting deeper than {} levels", kMaxNestingDepth));
      }
      return true;
    });
  } catch (const json::exception& error) {
    // nlohmann's messages start with "[json.exception.parse_error.101] ": keep the reason.
    std::string reason = error.what();
    const auto bracket = reason.find("] ");
    if (reason.rfind("[json.exception", 0) == 0 && bracket != std::string::npos) {
      reason = reason.substr(bracket + 2);
    }
    // The parser quotes the bytes it last read, which may be invalid UTF-8: escape them.
    std::string printable;
    for (const char c : reason) {
      const auto byte = static_cast<unsigned char>(c);
      printable += byte < 0x80 ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
    }
    throw UserError("invalid JSON: " + printable);
  }
}

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw UserError(fmt::format("cannot open {} '{}': {}", what, path, std::strerror(errno)));
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  } catch (const std::exception&) {  // libstdc++ throws when the path is a directory
    file.setstate(std::ios::badbit);
  }
  if (file.bad()) throw UserError(fmt::format("cannot read {} '{}' (is it a regular file?)", what, path));
  if (text.empty()) throw UserError(fmt::format("{} '{}' is empty", what, path));
  return text;
}

void write_text_file_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) throw UserError(fmt::format("cannot write '{}': {}", temporary, std::strerror(errno)));
    file << text;
    file.close();
    if (!file) throw UserError(fmt::format("error while writing '{}'", temporary));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    throw UserError(fmt::format("cannot rename '{}' to '{}': {}", temporary, path, reason));
  }
}

std::string json_excerpt(const json& value) {
  return text_excerpt(value.dump(-1, ' ', true, json::error_handler_t::replace));
}

std::string text_excerpt(const std::string& text) {
  if (text.size() <= kExcerptLength) return text;
  return text.substr(0, kExcerptLength - 3) + "...";
}

JsonObjectReader::JsonObjectReader(const json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) {
    throw UserError(fmt::format("{}: must be a JSON object, got {}", where_, json_excerpt(object_)));
  }
}

void JsonObjectReader::fail(const std::string& key, const std::string& problem) const {
  throw UserError(fmt::format("{}: field '{}' {}", where_, key, problem));
}

const json* JsonObjectReader::find(const std::string& key) {
  used_.insert(key);
  const auto found = object_.find(key);
  return found == object_.end() ? nullptr : &*found;
}

const json& JsonObjectReader::require(const std::string& key) {
  const json* value = find(key);
  if (value == nullptr) fail(key, "is missing");
  return *value;
}

int64_t JsonObjectReader::as_int(const std::string& key, const json& value) const {
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(key, fmt::format("is too large: {}", json_excerpt(value)));
    }
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  fail(key, fmt::format("must be an integer, got {}", json_excerpt(value)));
}

double JsonObjectReader::as_number(const std::string& key, const json& value) const {
  if (!value.is_number()) fail(key, fmt::format("must be a number, got {}", json_excerpt(value)));
  return value.get<double>();
}

bool JsonObjectReader::as_bool(const std::string& key, const json& value) const {
  if (!value.is_boolean()) fail(key, fmt::format("must be true or false, got {}", json_excerpt(value)));
  return value.get<bool>();
}

std::string JsonObjectReader::as_string(const std::string& key, const json& value) const {
  if (!value.is_string()) fail(key, fmt::format("must be a string, got {}", json_excerpt(value)));
  return value.get<std::string>();
}

int64_t JsonObjectReader::get_int(const std::string& key, int64_t fallback) {
  const json* value = find(key);
  return value == nullptr ? fallback : as_int(key, *value);
}

double JsonObjectReader::get_number(const std::string& key, double fallback) {
  const json* value = find(key);
  return value == nullptr ? fallback : as_number(key, *value);
}

std::string JsonObjectReader::get_string(const std::string& key, const std::string& fallback) {
  const json* value = find(key);
  return value == nullptr ? fallback : as_string(key, *value);
}

void JsonObjectReader::reject_unknown_keys() const {
  for (const auto& item : object_.items()) {
    if (used_.count(item.key()) != 0) continue;
    std::string accepted;
    for (const auto& key : used_) accepted += (accepted.empty() ? "" : ", ") + key;
    throw UserError(fmt::format("{}: unknown field '{}' (accepted: {})", where_,
                                text_excerpt(item.key()), accepted));
  }
}

void check_format(JsonObjectReader& reader, const std::string& format, int64_t version) {
  check_format(reader, format, version, version);
}

int64_t check_format(JsonObjectReader& reader, const std::string& format, int64_t oldest, int64_t newest) {
  const std::string found = reader.get_string("format");
  if (found != format) {
    throw UserError(fmt::format("{}: format is \"{}\", expected \"{}\"", reader.where(),
                                text_excerpt(found), format));
  }
  const int64_t found_version = reader.get_int("version");
  if (found_version < oldest || found_version > newest) {
    throw UserError(fmt::format("{}: format version {} is not supported (this burst reads {})", reader.where(),
                                found_version,
                                oldest == newest ? fmt::format("version {}", newest)
                                                 : fmt::format("versions {} to {}", oldest, newest)));
  }
  return found_version;
}

}  // namespace burst
