#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

// Reading members of a pod (or another API object) that may be absent or of another shape.
namespace kube_rdma {

// The member `key` of `object`; nullptr when `object` is not an object or lacks it.
inline const nlohmann::json* member(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) {
    return nullptr;
  }
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A view into `object`; "" when the member is absent or not a string.
inline std::string_view stringMember(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* value = member(object, key);
  return value != nullptr && value->is_string()
             ? std::string_view(value->get_ref<const std::string&>())
             : std::string_view();
}

// The pod's namespace: its metadata's, else the request's (controllers create pods without one).
inline std::string podNamespace(const nlohmann::json& pod, const std::string& request_namespace) {
  const nlohmann::json* metadata = member(pod, "metadata");
  const std::string_view ns = metadata != nullptr ? stringMember(*metadata, "namespace") : "";
  return ns.empty() ? request_namespace : std::string(ns);
}

} // namespace kube_rdma
