#include "test/yaml_documents.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <regex>

namespace kube_rdma {
namespace {

using nlohmann::json;

// YAML 1.2's core schema, the one Kubernetes' decoder (sigs.k8s.io/yaml) resolves plain scalars
// with; a quoted scalar carries the non-specific tag "!" and is always a string.
json scalar(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") {
    return text;
  }
  static const std::regex kNull("~|null|Null|NULL|");
  static const std::regex kTrue("true|True|TRUE");
  static const std::regex kFalse("false|False|FALSE");
  static const std::regex kInteger("[-+]?[0-9]+");
  static const std::regex kFloat("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (std::regex_match(text, kNull)) {
    return nullptr;
  }
  if (std::regex_match(text, kTrue)) {
    return true;
  }
  if (std::regex_match(text, kFalse)) {
    return false;
  }
  if (std::regex_match(text, kInteger)) {
    int64_t value = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    if (std::from_chars(begin, text.data() + text.size(), value).ec == std::errc()) {
      return value;
    }
  }
  if (std::regex_match(text, kFloat)) {
    return std::stod(text);
  }
  return text;
}

json toJson(const YAML::Node& node) {
  switch (node.Type()) {
  case YAML::NodeType::Map: {
    json object = json::object();
    for (const auto& entry : node) {
      object[entry.first.as<std::string>()] = toJson(entry.second);
    }
    return object;
  }
  case YAML::NodeType::Sequence: {
    json array = json::array();
    for (const auto& item : node) {
      array.push_back(toJson(item));
    }
    return array;
  }
  case YAML::NodeType::Scalar:
    return scalar(node);
  default:
    return nullptr;
  }
}

} // namespace

Result<std::vector<json>> parseYamlDocuments(const std::string& text) {
  try {
    std::vector<json> documents;
    for (const YAML::Node& node : YAML::LoadAll(text)) {
      if (node.IsDefined() && !node.IsNull()) {
        documents.push_back(toJson(node));
      }
    }
    return documents;
  } catch (const YAML::Exception& e) {
    return makeError(std::string("YAML: ") + e.what());
  }
}

} // namespace kube_rdma
