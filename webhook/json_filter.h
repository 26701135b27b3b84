#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

// Parsing only the parts of a JSON document a reader uses. A review's pod is mostly members the
// webhook never reads (managedFields, command lines, probes, status); building nlohmann nodes for
// them, then freeing them, was most of the CPU a review cost.
namespace kube_rdma {

// Which members of an object to keep, recursively. Arrays are transparent: every element is kept
// (so indices, and the JSON Pointers built from them, stay those of the document) and filtered
// with the array's filter. Scalars are kept wherever they appear.
class JsonFilter {
public:
  // Keeps the value and everything below it.
  static JsonFilter whole() { return JsonFilter(); }
  // Keeps only the listed members of an object, each filtered in turn.
  JsonFilter(std::initializer_list<std::pair<std::string, JsonFilter>> members)
      : keep_all_(false), members_(members) {}

  // The filter for member `key` of an object this filter applies to; nullptr: drop the member.
  const JsonFilter* member(std::string_view key) const;

private:
  JsonFilter() = default;

  bool keep_all_ = true;
  std::vector<std::pair<std::string, JsonFilter>> members_;
};

// Parses `text` keeping what `filter` keeps. Errors: "not JSON: ..." with the byte offset where
// parsing stopped (syntax, invalid UTF-8, trailing bytes, a text that ends early) and "nests deeper
// than N levels" (objects and arrays, counted in dropped parts too: a body of a million '[' is
// refused at level max_depth + 1 without building anything).
Result<nlohmann::json> parseFiltered(std::string_view text, const JsonFilter& filter,
                                     size_t max_depth);

} // namespace kube_rdma
