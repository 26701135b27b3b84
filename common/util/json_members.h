#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

// Reading members of an API object held as nlohmann-json that may be absent or of another shape,
// without the exceptions nlohmann's own accessors throw.
namespace kube_rdma {

// The member `key` of `object`; nullptr when `object` is not an object or lacks it.
inline const nlohmann::json* jsonMember(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) {
    return nullptr;
  }
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// "" when the member is absent or not a string.
inline std::string jsonStringMember(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* value = jsonMember(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

// metadata.<key> of an API object, "" when absent or not a string.
inline std::string metadataString(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* metadata = jsonMember(object, "metadata");
  return metadata != nullptr ? jsonStringMember(*metadata, key) : "";
}

} // namespace kube_rdma
