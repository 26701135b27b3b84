#include "common/node/topology.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <limits.h>
#include <unistd.h>

namespace kube_rdma {
namespace {

bool isHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

// "pciDDDD:BB"
bool isRootComplex(std::string_view s) {
  return s.size() == 10 && s.substr(0, 3) == "pci" && s[7] == ':' && isHex(s[3]) && isHex(s[4]) &&
         isHex(s[5]) && isHex(s[6]) && isHex(s[8]) && isHex(s[9]);
}

// The PCI nodes NCCL keeps above a device, nearest first (see classifyPciPath).
std::vector<std::string_view> ncclAncestors(const std::vector<std::string>& path) {
  std::vector<std::string_view> out;
  for (int i = static_cast<int>(path.size()) - 3; i >= 0; i -= 2) {
    out.push_back(path[static_cast<size_t>(i)]);
  }
  return out;
}

} // namespace

bool isPciAddress(std::string_view s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') {
    return false;
  }
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!isHex(s[i])) {
      return false;
    }
  }
  return s[11] >= '0' && s[11] <= '7';
}

std::string toString(PciPathType type) {
  static constexpr const char* kNames[] = {"PIX", "PXB", "PHB", "SYS"};
  static_assert(std::size(kNames) == static_cast<size_t>(PciPathType::kSys) + 1);
  return kNames[static_cast<size_t>(type)];
}

Result<std::vector<std::string>> parsePciePath(std::string_view path) {
  size_t slash = path.find('/');
  if (!isRootComplex(path.substr(0, slash))) {
    return makeError("PCI device path \"" + std::string(path) +
                     "\" does not start with a root complex \"pciDDDD:BB\"");
  }
  std::vector<std::string> out;
  while (slash != std::string_view::npos) {
    const size_t start = slash + 1;
    slash = path.find('/', start);
    const std::string_view part = path.substr(start, slash - start); // npos - start: to the end
    if (!isPciAddress(part)) {
      return makeError("PCI device path \"" + std::string(path) + "\": \"" + std::string(part) +
                       "\" is not a PCI address DDDD:BB:DD.F");
    }
    out.emplace_back(part);
  }
  if (out.empty()) {
    return makeError("PCI device path \"" + std::string(path) + "\" names no PCI function");
  }
  return out;
}

Result<std::vector<std::string>> resolvePciePath(const std::string& resolved_sysfs_root,
                                                 const std::string& link, int dir_fd) {
  char buf[PATH_MAX];
  std::string real;
  if (dir_fd >= 0) {
    const std::string proc = "/proc/self/fd/" + std::to_string(dir_fd);
    const ssize_t n = ::readlink(proc.c_str(), buf, sizeof(buf));
    if (n > 0 && static_cast<size_t>(n) < sizeof(buf)) {
      real.assign(buf, static_cast<size_t>(n));
    }
  }
  if (real.empty()) {
    if (::realpath(link.c_str(), buf) == nullptr) {
      return makeError("cannot resolve " + link);
    }
    real = buf;
  }
  const std::string prefix = resolved_sysfs_root + "/devices/";
  if (real.compare(0, prefix.size(), prefix) != 0) {
    return makeError(link + " resolves to " + real + ", outside " + prefix);
  }
  return parsePciePath(std::string_view(real).substr(prefix.size()));
}

std::string rootComplexOf(const std::vector<std::string>& pcie_path) {
  if (pcie_path.empty()) {
    return "";
  }
  return "pci" + pcie_path.front().substr(0, 7);
}

PciPathType classifyPciPath(const std::vector<std::string>& a, std::optional<int> numa_a,
                            const std::vector<std::string>& b, std::optional<int> numa_b) {
  if (a.empty() || b.empty()) {
    return PciPathType::kSys;
  }
  const auto up_a = ncclAncestors(a);
  const auto up_b = ncclAncestors(b);
  for (size_t i = 0; i < up_a.size(); ++i) {
    const auto it = std::find(up_b.begin(), up_b.end(), up_a[i]);
    if (it != up_b.end()) {
      const size_t nodes = i + static_cast<size_t>(it - up_b.begin()) + 1;
      return nodes <= 1 ? PciPathType::kPix : PciPathType::kPxb;
    }
  }
  if (rootComplexOf(a) == rootComplexOf(b) || (numa_a && numa_b && *numa_a == *numa_b)) {
    return PciPathType::kPhb;
  }
  return PciPathType::kSys;
}

PciPathType pathType(const GpuDevice& gpu, const RdmaDevice& hca) {
  return classifyPciPath(gpu.pcie_path, gpu.numa_node, hca.pcie_path, hca.numa_node);
}

std::vector<std::string> closestHcas(const GpuDevice& gpu, const NodeTopology& topology) {
  std::vector<std::string> out;
  auto best = PciPathType::kSys;
  for (const auto& hca : topology.devices) {
    if (hca.is_vf) {
      continue;
    }
    const auto type = pathType(gpu, hca);
    if (out.empty() || type < best) {
      out.clear();
      best = type;
    }
    if (type == best) {
      out.push_back(hca.name);
    }
  }
  return out;
}

} // namespace kube_rdma
