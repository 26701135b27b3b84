#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/util/result.h"

// Strict reading of JSON documents (the plugin config, the webhook policy). Every problem is
// reported with the JSON path of the offending field, e.g.
//   $.pools[1].selector.linkLayer: expected one of "InfiniBand", "Ethernet", got "ib"
// Unknown keys, wrong types and out-of-range values are errors, never silently ignored.
//
// Usage: parse the text with parseJsonDocument(), make a root ObjectReader over a JsonErrors,
// read every field, call finish() on every reader (it reports the keys nobody asked for), then
// turn the collected errors into a Status with JsonErrors::status(). Readers keep reading after
// an error (returning the fallback) so one pass reports every problem at once.
namespace kube_rdma {

// The problems found in one document. Readers made from one another share it.
class JsonErrors {
public:
  void add(const std::string& path, const std::string& message);
  // Ok when nothing was wrong; otherwise one Error whose message is every problem ("path:
  // message", in the order found), "; "-joined.
  Status status() const;

private:
  std::vector<std::string> messages_;
};

// Parses JSON text. Duplicate keys in an object are an error (with the path of the object), since
// nlohmann would silently keep the last one. `what` names the document in the message ("config").
Result<nlohmann::json> parseJsonDocument(const std::string& text, const std::string& what);

// "$.pools[0]" + "selector" -> "$.pools[0].selector"; keys that are not identifiers are quoted:
// "$.env[\"A B\"]".
std::string jsonChildPath(const std::string& parent, const std::string& key);
std::string jsonIndexPath(const std::string& parent, size_t index);

// How a JSON value is named in an error: strings quoted, numbers/booleans/null as written,
// "an object" / "an array" otherwise.
std::string describeJson(const nlohmann::json& value);

// Reads one JSON object. An absent object (optional section not given) reads as empty.
// The json value must outlive the reader; `errors` too.
class ObjectReader {
public:
  // A reader over `value` at `path`. When `value` is not an object that is an error at `path`.
  ObjectReader(const nlohmann::json& value, std::string path, JsonErrors& errors);
  // The root of a document: path "$".
  static ObjectReader root(const nlohmann::json& value, JsonErrors& errors) {
    return ObjectReader(value, "$", errors);
  }

  std::string pathOf(const std::string& key) const { return jsonChildPath(path_, key); }
  bool has(const std::string& key) const;

  // Supported T: bool, std::string, int64_t, std::vector<std::string>,
  // std::map<std::string, std::string> (an object of strings). A missing required key is an
  // error; a wrong type is an error; the fallback (or T{}) is returned in both cases.
  template <class T> T required(const std::string& key);
  template <class T> T optional(const std::string& key, T fallback);
  // Absent -> nullopt; present but of the wrong type -> error and nullopt.
  template <class T> std::optional<T> maybe(const std::string& key);

  // Integers in [min, max]; 1.5, true and "3" are type errors, 2^70 is out of range.
  int64_t optionalInt(const std::string& key, int64_t min, int64_t max, int64_t fallback);

  // A string that must be one of `allowed` (compared exactly).
  std::string requiredEnum(const std::string& key, const std::vector<std::string>& allowed);
  std::string optionalEnum(const std::string& key, const std::vector<std::string>& allowed,
                           const std::string& fallback);

  // The raw value for fields with several shapes (a number or "auto"); marks the key as known.
  // nullptr when absent.
  const nlohmann::json* raw(const std::string& key);

  // A nested object; absent reads as an empty object unless `required`.
  ObjectReader object(const std::string& key, bool required = false);
  // Each element of an array of objects, as readers at "key[i]". Absent -> empty unless required.
  std::vector<ObjectReader> objectArray(const std::string& key, bool required = false);

  // Records a validation problem with a field of this object (wrong value, not wrong type).
  void fail(const std::string& key, const std::string& message);
  // Records a problem at a full path below this object, e.g. one element of a string array:
  // failAt(jsonIndexPath(pathOf("vendors"), 2), "...").
  void failAt(const std::string& path, const std::string& message);

  // Reports every key of the object that no read above asked for, naming the known ones.
  void finish();

private:
  // An absent optional object: reads as empty.
  ObjectReader(std::string path, JsonErrors& errors);
  const nlohmann::json* lookup(const std::string& key, bool required);
  // One overload per supported T; false (and an error recorded) when the type is wrong.
  bool convert(const nlohmann::json& value, const std::string& path, bool& out);
  bool convert(const nlohmann::json& value, const std::string& path, std::string& out);
  bool convert(const nlohmann::json& value, const std::string& path, int64_t& out);
  bool convert(const nlohmann::json& value, const std::string& path, std::vector<std::string>& out);
  bool convert(const nlohmann::json& value, const std::string& path,
               std::map<std::string, std::string>& out);
  std::optional<std::string> enumValue(const nlohmann::json& value, const std::string& key,
                                       const std::vector<std::string>& allowed);

  const nlohmann::json* value_; // nullptr: an absent optional object, reads as empty
  std::string path_;
  JsonErrors* errors_;
  std::set<std::string> known_;
};

template <class T> T ObjectReader::required(const std::string& key) {
  if (const nlohmann::json* v = lookup(key, true)) {
    T converted{};
    if (convert(*v, pathOf(key), converted)) {
      return converted;
    }
  }
  return T{};
}

template <class T> T ObjectReader::optional(const std::string& key, T fallback) {
  return maybe<T>(key).value_or(std::move(fallback));
}

template <class T> std::optional<T> ObjectReader::maybe(const std::string& key) {
  if (const nlohmann::json* v = lookup(key, false)) {
    T converted{};
    if (convert(*v, pathOf(key), converted)) {
      return converted;
    }
  }
  return std::nullopt;
}

} // namespace kube_rdma
