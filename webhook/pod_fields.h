#pragma once

#include <string>
#include <string_view>

#include <simdjson.h>

// Reading members of a pod as the webhook parsed it (simdjson's DOM, never copied) that may be
// absent or of another shape.
namespace kube_rdma {

using JsonElement = simdjson::dom::element;

// The member `key` of `object`; false when `object` is not an object or lacks it.
inline bool member(JsonElement object, std::string_view key, JsonElement& out) {
  simdjson::dom::object fields;
  return object.get(fields) == simdjson::SUCCESS &&
         fields.at_key(key).get(out) == simdjson::SUCCESS;
}

// Whether `object` has the member `key` (of any value, null too).
inline bool hasMember(JsonElement object, std::string_view key) {
  JsonElement ignored;
  return member(object, key, ignored);
}

// A view into the parse; "" when `value` is not a string.
inline std::string_view stringOf(JsonElement value) {
  std::string_view text;
  return value.get(text) == simdjson::SUCCESS ? text : std::string_view();
}

// "" when the member is absent or not a string.
inline std::string_view stringMember(JsonElement object, std::string_view key) {
  JsonElement value;
  return member(object, key, value) ? stringOf(value) : std::string_view();
}

// An empty array to iterate where a member is absent or not an array (a default simdjson array has
// no document to iterate).
inline simdjson::dom::array noElements() {
  static simdjson::dom::parser parser;
  static const simdjson::dom::array empty = parser.parse("[]", 2).get_array().value();
  return empty;
}

// The elements of `value` when it is an array, none otherwise.
inline simdjson::dom::array arrayOf(JsonElement value) {
  simdjson::dom::array items;
  return value.get(items) == simdjson::SUCCESS ? items : noElements();
}

inline simdjson::dom::array arrayMember(JsonElement object, std::string_view key) {
  JsonElement value;
  return member(object, key, value) ? arrayOf(value) : noElements();
}

// The pod's namespace: its metadata's, else the request's (controllers create pods without one).
inline std::string podNamespace(JsonElement pod, const std::string& request_namespace) {
  JsonElement metadata;
  const std::string_view ns =
      member(pod, "metadata", metadata) ? stringMember(metadata, "namespace") : std::string_view();
  return ns.empty() ? request_namespace : std::string(ns);
}

} // namespace kube_rdma
