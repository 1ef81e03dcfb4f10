#pragma once
// Strict JSON input for burst's file formats (models, profiles, clusters, plans).
// Files are untrusted: every problem becomes a UserError with a one-line reason that
// names where it is (e.g. "entry #3") and the field.
#include <cstdint>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace burst {

// Parses JSON text; nesting deeper than 64 levels is refused before it is built.
// Errors: "invalid JSON: parse error at line 1, column 5: ...".
nlohmann::json parse_json_text(const std::string& text);

// Reads a whole file ("cannot open <what> '<path>': <reason>").
std::string read_text_file(const std::string& path, const std::string& what);
// Writes `text` to `path` via a temporary file and rename, so a crash mid-write never
// leaves a partial file behind.
void write_text_file_atomically(const std::string& path, const std::string& text);

// A JSON value or string shortened for error messages (at most 40 characters); the command
// escapes what it prints (utf8.h, escape_for_terminal).
std::string json_excerpt(const nlohmann::json& value);
std::string text_excerpt(const std::string& text);

// Reads the typed fields of one JSON object. Every key looked up is remembered, so
// reject_unknown_keys() can refuse typos.
class JsonObjectReader {
 public:
  // `where` prefixes errors, e.g. "layer #3 'conv1' (conv2d)" or "profile entry #7".
  JsonObjectReader(const nlohmann::json& object, std::string where);

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;

  // The value of `key`, or nullptr when absent (the key counts as known either way).
  const nlohmann::json* find(const std::string& key);
  const nlohmann::json& require(const std::string& key);

  // Typed conversions of a value found under `key` (errors name `key`).
  int64_t as_int(const std::string& key, const nlohmann::json& value) const;
  double as_number(const std::string& key, const nlohmann::json& value) const;
  bool as_bool(const std::string& key, const nlohmann::json& value) const;
  std::string as_string(const std::string& key, const nlohmann::json& value) const;

  // Required fields.
  int64_t get_int(const std::string& key) { return as_int(key, require(key)); }
  double get_number(const std::string& key) { return as_number(key, require(key)); }
  std::string get_string(const std::string& key) { return as_string(key, require(key)); }
  // Optional fields with a default.
  int64_t get_int(const std::string& key, int64_t fallback);
  double get_number(const std::string& key, double fallback);
  std::string get_string(const std::string& key, const std::string& fallback);

  // Refuses keys nobody asked for.
  void reject_unknown_keys() const;

  const std::string& where() const { return where_; }

 private:
  const nlohmann::json& object_;
  std::string where_;
  std::set<std::string> used_;
};

// Checks a document's "format" and "version" fields against what this burst reads.
void check_format(JsonObjectReader& reader, const std::string& format, int64_t version);
// The same for a format that reads versions [oldest, newest]: the document's version.
int64_t check_format(JsonObjectReader& reader, const std::string& format, int64_t oldest, int64_t newest);

}  // namespace burst
