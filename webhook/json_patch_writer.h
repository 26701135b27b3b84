#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/util/result.h"
#include "webhook/pod_fields.h"

// The mutator only ever adds to a pod, so it builds what it adds as a small tree and writes the
// RFC 6902 operations from that tree against the pod as sent: no copy of the pod, no diff.
namespace kube_rdma {

// What the mutator adds below one member of the pod: a string, members of an object, or elements
// appended to an array, in the order added.
struct Addition {
  enum class Kind { kString, kObject, kArray };
  Kind kind = Kind::kObject;
  std::string key;                // its name as a member of an object
  std::string text;               // kString: the value
  std::vector<Addition> children; // kObject: the members; kArray: the elements

  static Addition string(std::string value) { return {Kind::kString, "", std::move(value), {}}; }
  static Addition object(std::initializer_list<std::pair<const char*, Addition>> members);

  // The member `name`, nullptr when there is none.
  Addition* find(std::string_view name);
  // The member `name`, created empty (of kind `created`) on first use.
  Addition& at(std::string_view name, Kind created = Kind::kObject);
  void set(std::string_view name, std::string value) {
    at(name, Kind::kString).text = std::move(value);
  }
  void append(std::string_view name, Addition element) {
    at(name, Kind::kArray).children.push_back(std::move(element));
  }
};

// Appends `value` as JSON text.
void appendJson(std::string& out, const Addition& value);

// Adds to this pass's kube-rdma.io/injected record what the previous pass's record holds and this
// one lacks, so nothing recorded is lost. The webhook records strings only; a previous record of
// another shape is replaced.
void mergeRecord(std::string_view previous, Addition& record);

// Appends to `patch` the RFC 6902 operations that add `additions` to `base`, the member of the pod
// at `path` (nullopt: absent); the first operation opens the JSON array, the caller closes it. A
// member the pod lacks (absent or null) is added whole, an array gets its new elements appended
// ("/-"), a string that differs is replaced by "add", and every path names what the pod has. An
// error names a member of the pod the additions cannot go into (an env that is a string...);
// `patch` is then incomplete and the pod is to be left alone.
Status writePatch(std::optional<JsonElement> base, const Addition& additions,
                  const std::string& path, std::string& patch);

} // namespace kube_rdma
