#include "plugin/preferred_allocation.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "common/util/strings.h"
#include "plugin/resource_manager.h"

namespace kube_rdma {
namespace {

size_t commonPrefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin();
}

constexpr int kNoNuma = -1;

} // namespace

Result<std::vector<std::string>>
choosePreferredAllocation(const std::vector<PlacedDevice>& devices,
                          const std::vector<std::string>& available,
                          const std::vector<std::string>& must_include, int size) {
  std::map<std::string, const PlacedDevice*> by_id;
  for (const auto& d : devices) {
    by_id[d.id] = &d;
  }
  std::vector<std::string> unknown;
  std::copy_if(available.begin(), available.end(), std::back_inserter(unknown),
               [&](const std::string& id) { return !by_id.count(id); });
  if (!unknown.empty()) {
    return makeError("unknown device IDs in available_deviceIDs: " + joinStrings(unknown, ", "));
  }
  const std::set<std::string> available_set(available.begin(), available.end());
  std::vector<std::string> missing;
  std::copy_if(must_include.begin(), must_include.end(), std::back_inserter(missing),
               [&](const std::string& id) { return !available_set.count(id); });
  if (!missing.empty()) {
    return makeError("must_include_deviceIDs not in available_deviceIDs: " +
                     joinStrings(missing, ", "));
  }
  if (size < 0 || static_cast<size_t>(size) > available_set.size()) {
    return makeError("allocation_size " + std::to_string(size) + " is not between 0 and the " +
                     std::to_string(available_set.size()) + " available devices");
  }
  const std::set<std::string> must_set(must_include.begin(), must_include.end());
  if (must_set.size() > static_cast<size_t>(size)) {
    return makeError("must_include_deviceIDs holds " + std::to_string(must_set.size()) +
                     " devices, more than allocation_size " + std::to_string(size));
  }

  std::vector<const PlacedDevice*> chosen;
  std::set<int> used_numa;
  for (const auto& id : must_set) {
    chosen.push_back(by_id[id]);
    used_numa.insert(by_id[id]->numa_node.value_or(kNoNuma));
  }
  std::map<int, int> free_per_numa;
  std::vector<const PlacedDevice*> candidates;
  for (const auto& id : available_set) {
    if (!must_set.count(id)) {
      candidates.push_back(by_id[id]);
      free_per_numa[by_id[id]->numa_node.value_or(kNoNuma)] += 1;
    }
  }
  // NUMA nodes in the order we fill them: already used, then the fullest, unknown last.
  auto numaRank = [&](int numa) {
    return std::tuple(numa == kNoNuma, !used_numa.count(numa), -free_per_numa[numa], numa);
  };
  while (chosen.size() < static_cast<size_t>(size)) {
    auto closeness = [&](const PlacedDevice* d) {
      size_t best = 0;
      for (const auto* c : chosen) {
        best = std::max(best, commonPrefix(d->pcie_path, c->pcie_path));
      }
      return best;
    };
    auto best = std::min_element(
        candidates.begin(), candidates.end(), [&](const PlacedDevice* a, const PlacedDevice* b) {
          const auto ka = std::tuple(numaRank(a->numa_node.value_or(kNoNuma)),
                                     -static_cast<long>(closeness(a)), a->pcie_path, a->id);
          const auto kb = std::tuple(numaRank(b->numa_node.value_or(kNoNuma)),
                                     -static_cast<long>(closeness(b)), b->pcie_path, b->id);
          return ka < kb;
        });
    chosen.push_back(*best);
    used_numa.insert((*best)->numa_node.value_or(kNoNuma));
    candidates.erase(best);
  }
  std::vector<std::string> ids(chosen.size());
  std::transform(chosen.begin(), chosen.end(), ids.begin(),
                 [](const PlacedDevice* d) { return d->id; });
  return ids;
}

} // namespace kube_rdma
