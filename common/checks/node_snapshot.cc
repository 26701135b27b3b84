#include "common/checks/node_snapshot.h"

#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <set>

#include "common/node/sysfs_attributes.h"

namespace kube_rdma {
namespace {

// PCI config space is 4096 bytes at most (PCIe extended); a reader without CAP_SYS_ADMIN gets 64.
constexpr size_t kConfigSpaceBytes = 4096;
// /proc/modules and /proc/<pid>/status run past an attribute's 4 KiB.
constexpr size_t kProcFileBytes = 1 << 20;

FileRead readText(const std::string& path, size_t max_bytes = kMaxAttributeBytes) {
  FileRead f{path, std::nullopt};
  if (auto text = readAttribute(path, max_bytes)) {
    f.text = std::move(*text);
  }
  return f;
}

// Binary content as it is: readAttribute would drop a last byte that happens to be '\n'.
FileRead readBytes(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return {path, std::nullopt};
  }
  std::string bytes(max_bytes, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(max_bytes));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return {path, std::move(bytes)};
}

// A directory whose presence is the fact: "" when it is there.
FileRead readPresence(const std::string& path) {
  return {path, ::access(path.c_str(), F_OK) == 0 ? std::optional<std::string>("") : std::nullopt};
}

PciFunctionFiles readPciFunction(const std::string& sysfs_root, const std::string& address) {
  const std::string dir = sysfs_root + "/bus/pci/devices/" + address + "/";
  return {readText(dir + "current_link_width"),         readText(dir + "max_link_width"),
          readText(dir + "current_link_speed"),         readText(dir + "max_link_speed"),
          readBytes(dir + "config", kConfigSpaceBytes), readText(dir + "iommu_group/type")};
}

std::map<int, FileRead> readEcnSide(const std::string& dir) {
  std::map<int, FileRead> side;
  for (const auto& name : listDirectory(dir)) {
    char* end = nullptr;
    const long prio = std::strtol(name.c_str(), &end, 10);
    if (end != name.c_str() && *end == '\0') {
      side.emplace(static_cast<int>(prio), readText(dir + "/" + name));
    }
  }
  return side;
}

} // namespace

NodeSnapshot readNodeSnapshot(const DiscoveryRoots& roots, const NodeTopology& topology,
                              ProcessSide process) {
  NodeSnapshot s;
  s.sysfs_root = roots.sysfs_root;
  const std::string& sys = roots.sysfs_root;
  const std::string& proc = roots.proc_root;
  std::set<std::string> functions; // every PCI function on an HCA's or a GPU's path
  for (const auto& d : topology.devices) {
    functions.insert(d.pcie_path.begin(), d.pcie_path.end());
    for (const auto& p : d.ports) {
      if (p.link_layer == LinkLayer::kEthernet && !p.netdev.empty()) {
        const std::string dir = sys + "/class/net/" + p.netdev;
        s.netdevs[p.netdev] = {readText(dir + "/mtu"), readEcnSide(dir + "/ecn/roce_np/enable"),
                               readEcnSide(dir + "/ecn/roce_rp/enable")};
      }
    }
  }
  for (const auto& g : topology.gpus) {
    functions.insert(g.pcie_path.begin(), g.pcie_path.end());
  }
  for (const auto& address : functions) {
    s.pci[address] = readPciFunction(sys, address);
  }
  s.dev_root = roots.dev_root;
  const auto uverbs_nodes = listDirectory(roots.dev_root + "/infiniband");
  s.uverbs_nodes.insert(uverbs_nodes.begin(), uverbs_nodes.end());
  s.osrelease = readText(proc + "/sys/kernel/osrelease");
  s.proc_modules = readText(proc + "/modules", kProcFileBytes);
  for (const char* module : kPeerMemoryModules) {
    s.peermem_modules[module] = readPresence(sys + "/module/" + module);
  }
  s.nvidia_proc_version = readText(proc + "/driver/nvidia/version");
  s.nvidia_module_version = readText(sys + "/module/nvidia/version");
  s.nvidia_taint = readText(sys + "/module/nvidia/taint");
  s.mlx5_core_version = readText(sys + "/module/mlx5_core/version");
  s.ib_core_netns_mode = readText(sys + "/module/ib_core/parameters/netns_mode");
  s.libibverbs = std::move(process.libibverbs);
  s.ofed_info = std::move(process.ofed_info);
  s.workload = std::move(process.workload);
  s.workload.limits = readText(proc + "/1/limits", kProcFileBytes);
  s.workload.status = readText(proc + "/1/status", kProcFileBytes);
  return s;
}

FileRead loadedLibibverbs() {
  FileRead f{"libibverbs (dladdr of ibv_get_device_list)", std::nullopt};
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&ibv_get_device_list), &info) == 0 ||
      info.dli_fname == nullptr) {
    return f;
  }
  char resolved[PATH_MAX];
  f.path = info.dli_fname;
  if (::realpath(info.dli_fname, resolved) != nullptr) {
    f.text = resolved;
  }
  return f;
}

bool gpuDirectReady(const NodeTopology& topology, const DiscoveryRoots& roots) {
  if (topology.gpus.empty()) {
    return false;
  }
  const NodeSnapshot snapshot = readNodeSnapshot(roots, topology, {loadedLibibverbs(), {}, {}});
  return checkGpuDirect(topology, snapshot).verdict == Verdict::kOk;
}

} // namespace kube_rdma
