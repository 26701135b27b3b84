#include "common/util/json_reader.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "common/util/strings.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

std::string quoteList(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + json(item).dump();
  }
  return out;
}

bool isIdentifier(const std::string& key) {
  return !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0])) &&
         std::all_of(key.begin(), key.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

// One open object or array while parsing, to name where a duplicate key is.
struct OpenContainer {
  bool is_array = false;
  size_t index = 0; // elements finished so far (arrays)
  std::string key;  // the member being read (objects)
  std::set<std::string> keys;
};

std::string pathOfTop(const std::vector<OpenContainer>& stack) {
  std::string path = "$";
  for (size_t i = 0; i + 1 < stack.size(); ++i) {
    path =
        stack[i].is_array ? jsonIndexPath(path, stack[i].index) : jsonChildPath(path, stack[i].key);
  }
  return path;
}

} // namespace

void JsonErrors::add(const std::string& path, const std::string& message) {
  messages_.push_back(path + ": " + message);
}

Status JsonErrors::status() const {
  if (messages_.empty()) {
    return Ok{};
  }
  return makeError(joinStrings(messages_, "; "));
}

Result<json> parseJsonDocument(const std::string& text, const std::string& what) {
  std::vector<OpenContainer> stack;
  std::optional<std::string> duplicate;
  const json::parser_callback_t track = [&](int /*depth*/, json::parse_event_t event,
                                            json& parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      stack.push_back(OpenContainer{event == json::parse_event_t::array_start, 0, "", {}});
      break;
    case json::parse_event_t::key: {
      auto& top = stack.back();
      top.key = parsed.get<std::string>();
      if (!top.keys.insert(top.key).second && !duplicate) {
        duplicate = pathOfTop(stack) + ": duplicate key " + json(top.key).dump();
      }
      break;
    }
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      stack.pop_back();
      [[fallthrough]]; // a closed container is one finished element of its parent
    case json::parse_event_t::value:
      if (!stack.empty() && stack.back().is_array) {
        ++stack.back().index;
      }
      break;
    }
    return true;
  };
  try {
    json doc = json::parse(text, track);
    if (duplicate) {
      return makeError(what + ": " + *duplicate);
    }
    return doc;
  } catch (const json::parse_error& e) {
    return makeError(what + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const json::out_of_range& e) {
    // A number too large for a double (1e400): the parser throws this, not a parse_error.
    return makeError(what + ": invalid JSON: " + e.what());
  }
}

std::string jsonChildPath(const std::string& parent, const std::string& key) {
  return isIdentifier(key) ? parent + "." + key : parent + "[" + json(key).dump() + "]";
}

std::string jsonIndexPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string describeJson(const json& value) {
  if (value.is_object()) {
    return "an object";
  }
  if (value.is_array()) {
    return "an array";
  }
  std::string text = value.dump();
  constexpr size_t kMaxShown = 64;
  if (text.size() > kMaxShown) {
    text = text.substr(0, kMaxShown) + "...";
  }
  return text;
}

ObjectReader::ObjectReader(const json& value, std::string path, JsonErrors& errors)
    : value_(&value), path_(std::move(path)), errors_(&errors) {
  if (!value.is_object()) {
    errors_->add(path_, "expected an object, got " + describeJson(value));
    value_ = nullptr;
  }
}

ObjectReader::ObjectReader(std::string path, JsonErrors& errors)
    : value_(nullptr), path_(std::move(path)), errors_(&errors) {}

bool ObjectReader::has(const std::string& key) const {
  return value_ != nullptr && value_->contains(key);
}

const json* ObjectReader::lookup(const std::string& key, bool required) {
  known_.insert(key);
  if (value_ != nullptr) {
    auto it = value_->find(key);
    if (it != value_->end()) {
      return &*it;
    }
  }
  if (required) {
    errors_->add(pathOf(key), "required key is missing");
  }
  return nullptr;
}

bool ObjectReader::convert(const json& value, const std::string& path, bool& out) {
  if (!value.is_boolean()) {
    errors_->add(path, "expected true or false, got " + describeJson(value));
    return false;
  }
  out = value.get<bool>();
  return true;
}

bool ObjectReader::convert(const json& value, const std::string& path, std::string& out) {
  if (!value.is_string()) {
    errors_->add(path, "expected a string, got " + describeJson(value));
    return false;
  }
  out = value.get<std::string>();
  return true;
}

bool ObjectReader::convert(const json& value, const std::string& path, int64_t& out) {
  if (!value.is_number_integer()) {
    errors_->add(path, "expected an integer, got " + describeJson(value));
    return false;
  }
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    errors_->add(path, "integer " + value.dump() + " is out of range");
    return false;
  }
  out = value.get<int64_t>();
  return true;
}

bool ObjectReader::convert(const json& value, const std::string& path,
                           std::vector<std::string>& out) {
  if (!value.is_array()) {
    errors_->add(path, "expected an array of strings, got " + describeJson(value));
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < value.size(); ++i) {
    std::string item;
    if (convert(value[i], jsonIndexPath(path, i), item)) {
      out.push_back(std::move(item));
    } else {
      ok = false;
    }
  }
  return ok;
}

bool ObjectReader::convert(const json& value, const std::string& path,
                           std::map<std::string, std::string>& out) {
  if (!value.is_object()) {
    errors_->add(path, "expected an object of strings, got " + describeJson(value));
    return false;
  }
  bool ok = true;
  for (const auto& [k, v] : value.items()) {
    std::string item;
    if (convert(v, jsonChildPath(path, k), item)) {
      out.emplace(k, std::move(item));
    } else {
      ok = false;
    }
  }
  return ok;
}

std::optional<std::string> ObjectReader::enumValue(const json& value, const std::string& key,
                                                   const std::vector<std::string>& allowed) {
  std::string out;
  if (!convert(value, pathOf(key), out)) {
    return std::nullopt;
  }
  if (listContains(allowed, out)) {
    return out;
  }
  fail(key, "expected one of " + quoteList(allowed) + ", got " + describeJson(value));
  return std::nullopt;
}

int64_t ObjectReader::optionalInt(const std::string& key, int64_t min, int64_t max,
                                  int64_t fallback) {
  const json* v = lookup(key, false);
  int64_t out = 0;
  if (v == nullptr || !convert(*v, pathOf(key), out)) {
    return fallback;
  }
  if (out < min || out > max) {
    fail(key, "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                  ", got " + std::to_string(out));
    return fallback;
  }
  return out;
}

std::string ObjectReader::requiredEnum(const std::string& key,
                                       const std::vector<std::string>& allowed) {
  const json* v = lookup(key, true);
  return v == nullptr ? "" : enumValue(*v, key, allowed).value_or("");
}

std::string ObjectReader::optionalEnum(const std::string& key,
                                       const std::vector<std::string>& allowed,
                                       const std::string& fallback) {
  const json* v = lookup(key, false);
  return v == nullptr ? fallback : enumValue(*v, key, allowed).value_or(fallback);
}

const json* ObjectReader::raw(const std::string& key) {
  return lookup(key, false);
}

ObjectReader ObjectReader::object(const std::string& key, bool required) {
  const json* v = lookup(key, required);
  return v != nullptr ? ObjectReader(*v, pathOf(key), *errors_)
                      : ObjectReader(pathOf(key), *errors_);
}

std::vector<ObjectReader> ObjectReader::objectArray(const std::string& key, bool required) {
  std::vector<ObjectReader> out;
  const json* v = lookup(key, required);
  if (v == nullptr) {
    return out;
  }
  if (!v->is_array()) {
    errors_->add(pathOf(key), "expected an array of objects, got " + describeJson(*v));
    return out;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    out.emplace_back((*v)[i], jsonIndexPath(pathOf(key), i), *errors_);
  }
  return out;
}

void ObjectReader::fail(const std::string& key, const std::string& message) {
  errors_->add(pathOf(key), message);
}

void ObjectReader::failAt(const std::string& path, const std::string& message) {
  errors_->add(path, message);
}

void ObjectReader::finish() {
  if (value_ == nullptr) {
    return;
  }
  const std::vector<std::string> known(known_.begin(), known_.end());
  for (const auto& [k, v] : value_->items()) {
    if (known_.count(k) == 0) {
      errors_->add(pathOf(k),
                   "unknown key" + (known.empty() ? std::string(" (no keys allowed)")
                                                  : " (known: " + quoteList(known) + ")"));
    }
  }
}

} // namespace kube_rdma
