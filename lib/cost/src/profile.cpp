#include "burst/cost/profile.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::cost {

using nlohmann::json;

namespace {

// A time in milliseconds from a profile file: finite and non-negative.
Seconds read_ms(JsonObjectReader& reader, const std::string& key) {
  const double ms = reader.get_number(key);
  if (!std::isfinite(ms) || ms < 0) reader.fail(key, fmt::format("must be a time >= 0 ms, got {}", ms));
  return Seconds::from_ms(ms);
}

std::optional<Seconds> read_optional_ms(JsonObjectReader& reader, const std::string& key) {
  if (reader.find(key) == nullptr) return std::nullopt;
  return read_ms(reader, key);
}

int64_t read_non_negative(JsonObjectReader& reader, const std::string& key) {
  const int64_t value = reader.get_int(key, 0);
  if (value < 0) reader.fail(key, fmt::format("must not be negative, got {}", value));
  return value;
}

double read_spread(JsonObjectReader& reader, const std::string& key) {
  const double spread = reader.get_number(key, 0.0);
  if (!std::isfinite(spread) || spread < 0) {
    reader.fail(key, fmt::format("must be a relative spread >= 0, got {}", spread));
  }
  return spread;
}

// A split entry's {"kind", "parts"}: a kind that divides the work, in 2 or more parts.
TensorSplit read_split(JsonObjectReader& reader) {
  const json* object = reader.find("split");
  if (object == nullptr) return {};
  JsonObjectReader split_reader(*object, reader.where() + " split");
  TensorSplit split;
  const std::string kind = split_reader.get_string("kind");
  try {
    split.kind = split_kind_from_name(kind);
  } catch (const UserError& error) {
    split_reader.fail("kind", error.what());
  }
  if (!divides_weights(split.kind)) {
    split_reader.fail("kind", fmt::format("must be column, row or heads, got {}", split_kind_name(split.kind)));
  }
  const int64_t parts = split_reader.get_int("parts");
  if (parts < 2 || parts > 1'000'000) split_reader.fail("parts", fmt::format("must be in [2, 1000000], got {}", parts));
  split.parts = static_cast<int32_t>(parts);
  split_reader.reject_unknown_keys();
  return split;
}

ProfileEntry entry_from_json(const json& object, size_t index) {
  JsonObjectReader reader(object, fmt::format("profile entry #{}", index));
  ProfileEntry entry;
  entry.signature = reader.get_string("signature");
  if (entry.signature.empty()) reader.fail("signature", "is empty");
  entry.op = reader.get_string("op");
  entry.batch = reader.get_int("batch");
  if (entry.batch <= 0) reader.fail("batch", fmt::format("must be positive, got {}", entry.batch));
  entry.split = read_split(reader);
  entry.forward = read_ms(reader, "forward_ms");
  entry.backward = read_ms(reader, "backward_ms");
  entry.backward_input = read_optional_ms(reader, "backward_input_ms");
  entry.backward_weight = read_optional_ms(reader, "backward_weight_ms");
  entry.update = read_optional_ms(reader, "update_ms");
  entry.split_forward = read_optional_ms(reader, "split_forward_ms");
  entry.split_backward = read_optional_ms(reader, "split_backward_ms");
  if (entry.split_forward.has_value() != entry.split_backward.has_value()) {
    reader.fail(entry.split_forward ? "split_backward_ms" : "split_forward_ms",
                "is missing: split times come in pairs");
  }
  entry.forward_spread = read_spread(reader, "forward_spread");
  entry.backward_spread = read_spread(reader, "backward_spread");
  const int64_t repetitions = read_non_negative(reader, "repetitions");
  if (repetitions > 1'000'000'000) reader.fail("repetitions", "is implausibly large");
  entry.repetitions = static_cast<int>(repetitions);
  entry.forward_flops_per_sample = read_non_negative(reader, "forward_flops_per_sample");
  entry.input_bytes_per_sample = read_non_negative(reader, "input_bytes_per_sample");
  entry.output_bytes_per_sample = read_non_negative(reader, "output_bytes_per_sample");
  entry.params = read_non_negative(reader, "params");
  reader.reject_unknown_keys();
  return entry;
}

// Milliseconds rounded to the nanosecond: seconds -> ms conversions would otherwise
// print as 0.9990000000000001.
double rounded_ms(Seconds time) { return std::round(time.ms() * 1e6) / 1e6; }

json entry_to_json(const ProfileEntry& entry) {
  json object = {{"signature", entry.signature},
                 {"op", entry.op},
                 {"batch", entry.batch},
                 {"forward_ms", rounded_ms(entry.forward)},
                 {"backward_ms", rounded_ms(entry.backward)}};
  if (entry.split.splits()) object["split"] = {{"kind", split_kind_name(entry.split.kind)}, {"parts", entry.split.parts}};
  if (entry.backward_input) object["backward_input_ms"] = rounded_ms(*entry.backward_input);
  if (entry.backward_weight) object["backward_weight_ms"] = rounded_ms(*entry.backward_weight);
  if (entry.update) object["update_ms"] = rounded_ms(*entry.update);
  if (entry.split_forward) object["split_forward_ms"] = rounded_ms(*entry.split_forward);
  if (entry.split_backward) object["split_backward_ms"] = rounded_ms(*entry.split_backward);
  object["forward_spread"] = entry.forward_spread;
  object["backward_spread"] = entry.backward_spread;
  object["repetitions"] = entry.repetitions;
  object["forward_flops_per_sample"] = entry.forward_flops_per_sample;
  object["input_bytes_per_sample"] = entry.input_bytes_per_sample;
  object["output_bytes_per_sample"] = entry.output_bytes_per_sample;
  object["params"] = entry.params;
  return object;
}

}  // namespace

Profile::Profile(const Profile& other)
    : device(other.device), description(other.description), source(other.source),
      entries(other.entries) {
  index();
}

Profile& Profile::operator=(const Profile& other) {
  if (this != &other) {
    device = other.device;
    description = other.description;
    source = other.source;
    entries = other.entries;
    index();
  }
  return *this;
}

std::string profile_key(const std::string& signature, const TensorSplit& split) {
  if (!split.splits()) return signature;
  return fmt::format("{} split {}/{}", signature, split_kind_name(split.kind), split.parts);
}

const std::map<int64_t, const ProfileEntry*>* Profile::find(const std::string& signature,
                                                            const TensorSplit& split) const {
  const auto found = by_signature_.find(profile_key(signature, split));
  return found == by_signature_.end() ? nullptr : &found->second;
}

void Profile::index() {
  by_signature_.clear();
  for (const ProfileEntry& entry : entries) {
    auto& batches = by_signature_[profile_key(entry.signature, entry.split)];
    if (!batches.emplace(entry.batch, &entry).second) {
      const std::string part = entry.split.splits() ? fmt::format(" ({}-way {} part)", entry.split.parts,
                                                                  split_kind_name(entry.split.kind))
                                                    : std::string();
      throw UserError(fmt::format("profile has two entries for batch {} of {}{}", entry.batch,
                                  text_excerpt(entry.signature), part));
    }
  }
}

std::string profile_to_json_text(const Profile& profile) {
  json entries = json::array();
  for (const ProfileEntry& entry : profile.entries) entries.push_back(entry_to_json(entry));
  const json document = {{"format", kProfileFormat},   {"version", kProfileFormatVersion},
                         {"device", profile.device},   {"description", profile.description},
                         {"source", profile.source},   {"entries", std::move(entries)}};
  // One entry per line keeps large profiles diffable and small.
  std::string text = "{\n";
  bool first = true;
  for (const auto& item : document.items()) {
    if (item.key() == "entries") continue;
    text += fmt::format("{}  {}: {}", first ? "" : ",\n", json(item.key()).dump(), item.value().dump());
    first = false;
  }
  text += ",\n  \"entries\": [";
  for (size_t i = 0; i < document["entries"].size(); ++i) {
    text += fmt::format("{}\n    {}", i == 0 ? "" : ",", document["entries"][i].dump());
  }
  text += "\n  ]\n}\n";
  return text;
}

Profile profile_from_json_text(const std::string& text) {
  const json document = parse_json_text(text);
  JsonObjectReader reader(document, "profile");
  check_format(reader, kProfileFormat, kProfileFormatVersion);
  Profile profile;
  profile.device = reader.get_string("device");
  if (profile.device.empty()) reader.fail("device", "is empty");
  profile.description = reader.get_string("description", "");
  profile.source = reader.get_string("source", "");
  const json& entries = reader.require("entries");
  reader.reject_unknown_keys();
  if (!entries.is_array()) reader.fail("entries", "must be a list of entry objects");
  profile.entries.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) profile.entries.push_back(entry_from_json(entries[i], i));
  profile.index();
  return profile;
}

Profile load_profile_file(const std::string& path) {
  const std::string text = read_text_file(path, "profile");
  try {
    return profile_from_json_text(text);
  } catch (const UserError& error) {
    throw UserError(fmt::format("{}: {}", path, error.what()));
  }
}

void save_profile_file(const Profile& profile, const std::string& path) {
  write_text_file_atomically(path, profile_to_json_text(profile));
}

}  // namespace burst::cost
