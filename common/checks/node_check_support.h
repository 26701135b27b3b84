#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/node/device_model.h"
#include "common/checks/node_checks.h"
#include "common/util/strings.h"

// What the node checks of every area use (node_checks*.cc); rdmactl doctor shares bytesText.
namespace kube_rdma {

// A failure outweighs a warning, which outweighs not knowing.
Verdict worse(Verdict a, Verdict b);

// A whole unsigned decimal number, spaces around allowed; nullopt for anything else.
std::optional<uint64_t> parseUnsigned(const std::string& text);

// A file's first line: the value of an attribute, the line that matters of a version file.
Evidence evidenceOf(const FileRead& file);

// The evidence of files a check read; a FileRead without a path (a fact the caller did not
// supply) is left out.
std::vector<Evidence> evidenceOf(std::initializer_list<const FileRead*> files);

// The snapshot's files of a PCI function; nullptr when it has none.
const PciFunctionFiles* pciFiles(const NodeSnapshot& snapshot, const std::string& address);

// A PCI function whose link the checks judge: every HCA that is a PCI function of its own
// (SR-IOV VFs share their PF's link; software devices have none) and every GPU.
struct LinkEnd {
  std::string label; // "mlx5_1 (0000:13:00.0)", "GPU 0000:12:00.0"
  std::string address;
  bool gpu = false;
};
std::vector<LinkEnd> linkEnds(const NodeTopology& topology);

// "<label of a value> on <its names>" for each value, in the values' order: how a check that
// groups ports or devices by what they read ("MTU 9000 on eth2, eth3") says what it found.
template <typename Value, typename Label>
std::vector<std::string> namesByValue(const std::map<Value, std::vector<std::string>>& groups,
                                      const Label& label) {
  std::vector<std::string> out;
  out.reserve(groups.size());
  for (const auto& [value, names] : groups) {
    out.push_back(label(value) + " on " + joinStrings(names, ", "));
  }
  return out;
}

// The first line of a /proc file that starts with `prefix`, "" when there is none.
std::string lineStartingWith(const std::string& text, const std::string& prefix);

// "16 GiB" for a whole number of GiB, else "64 MiB" or "64 KiB", rounded down.
std::string bytesText(uint64_t bytes);

} // namespace kube_rdma
