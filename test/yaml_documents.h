#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/util/result.h"

// Kubernetes YAML files (examples/, manifests/) as the JSON objects the API server stores, for
// tests and the demo that send what a user would apply.
namespace kube_rdma {

// Every non-empty document of a multi-document YAML text, converted as Kubernetes decodes YAML:
// plain scalars that read as integers, floats, booleans or null get those types, quoted ones stay
// strings (`cpu: "8"` is a string, `replicas: 4` a number). An error names the YAML problem.
Result<std::vector<nlohmann::json>> parseYamlDocuments(const std::string& text);

} // namespace kube_rdma
