#include "common/node/sysfs_discovery.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits.h>
#include <map>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

#include "common/node/default_route.h"
#include "common/node/namespace_addresses.h"
#include "common/util/strings.h"
#include "common/node/sysfs_attributes.h"
#include "common/node/topology.h"

namespace kube_rdma {
namespace {

constexpr int kArphrdInfiniband = 32;

// An owned directory file descriptor; attribute reads go through openat() relative to it, which
// keeps the path walk short (discovery reads thousands of GID files).
class DirFd {
public:
  DirFd() = default;
  DirFd(int parent, const std::string& name)
      : fd_(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}
  explicit DirFd(const std::string& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}
  DirFd(const DirFd&) = delete;
  DirFd& operator=(const DirFd&) = delete;
  DirFd(DirFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ~DirFd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  bool ok() const { return fd_ >= 0; }
  int get() const { return fd_; }

private:
  int fd_ = -1;
};

std::optional<std::string> readLinkBase(int dir_fd, const char* name) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlinkat(dir_fd, name, buf, sizeof(buf) - 1);
  if (n <= 0) {
    return std::nullopt;
  }
  const std::string target(buf, static_cast<size_t>(n));
  const size_t slash = target.rfind('/');
  return slash == std::string::npos ? target : target.substr(slash + 1);
}

// Warnings name paths relative to the sysfs root.
using Warnings = std::vector<DiscoveryWarning>;

std::optional<std::string> readOrWarn(int dir_fd, const std::string& rel_dir, const char* name,
                                      Warnings& warnings) {
  auto text = readAttributeAt(dir_fd, name);
  if (!text) {
    warnings.push_back({rel_dir + "/" + name, text.error().message});
    return std::nullopt;
  }
  return std::move(*text);
}

// Parses an attribute with `parse`; a read or parse failure is a warning and leaves `out` alone.
template <class T, class Parse>
void readParsed(int dir_fd, const std::string& rel_dir, const char* name, Warnings& warnings,
                Parse parse, T& out) {
  auto text = readOrWarn(dir_fd, rel_dir, name, warnings);
  if (!text) {
    return;
  }
  auto parsed = parse(*text);
  if (!parsed) {
    warnings.push_back({rel_dir + "/" + name, parsed.error().message});
    return;
  }
  out = std::move(*parsed);
}

// For attributes kept as the kernel prints them (GUIDs, firmware, vendor ids).
Result<std::string> asText(const std::string& text) {
  return text;
}

struct NetdevInfo {
  std::string name;
  int type = 0;
  int dev_port = -1;
  std::string address;
};

std::vector<NetdevInfo> readNetdevs(int device_fd, const std::vector<std::string>& names) {
  std::vector<NetdevInfo> out;
  for (const auto& name : names) {
    DirFd nd(device_fd, "net/" + name);
    NetdevInfo info;
    info.name = name;
    if (nd.ok()) {
      if (auto t = readAttributeAt(nd.get(), "type")) {
        std::from_chars(t->data(), t->data() + t->size(), info.type);
      }
      if (auto p = readAttributeAt(nd.get(), "dev_port")) {
        std::from_chars(p->data(), p->data() + p->size(), info.dev_port);
      }
      if (auto a = readAttributeAt(nd.get(), "address")) {
        info.address = *a;
      }
    }
    out.push_back(std::move(info));
  }
  return out;
}

// The port GUID (last 8 bytes of the GID) as the IPoIB hardware address ends:
// "fe80:0000:0000:0000:0c42:a103:0065:d6b7" -> "0c:42:a1:03:00:65:d6:b7".
std::string guidSuffix(const std::string& kernel_gid) {
  std::string out;
  for (size_t i = 20; i + 4 <= kernel_gid.size(); i += 5) {
    if (!out.empty()) {
      out += ':';
    }
    out += kernel_gid.substr(i, 2) + ":" + kernel_gid.substr(i + 2, 2);
  }
  return out;
}

// The port's netdev: RoCE uses the netdev of GID 0 (as ibdev2netdev does); IB matches the IPoIB
// hardware address against GID 0's port GUID. Fallback for both: the netdev of the function whose
// dev_port is port-1 and whose type fits the link layer, or the only candidate.
std::string portNetdev(const Port& port, const std::vector<NetdevInfo>& netdevs) {
  const GidEntry* gid0 =
      port.gids.empty() || port.gids.front().index != 0 ? nullptr : &port.gids.front();
  const bool ib = port.link_layer == LinkLayer::kInfiniBand;
  if (!ib && gid0 != nullptr && !gid0->netdev.empty()) {
    return gid0->netdev;
  }
  std::vector<const NetdevInfo*> candidates;
  for (const auto& nd : netdevs) {
    if ((nd.type == kArphrdInfiniband) == ib) {
      candidates.push_back(&nd);
    }
  }
  if (ib && gid0 != nullptr) {
    const std::string suffix = guidSuffix(gid0->gid);
    for (const auto* nd : candidates) {
      if (nd->address.size() >= suffix.size() &&
          nd->address.compare(nd->address.size() - suffix.size(), suffix.size(), suffix) == 0) {
        return nd->name;
      }
    }
  }
  for (const auto* nd : candidates) {
    if (nd->dev_port == static_cast<int>(port.number) - 1) {
      return nd->name;
    }
  }
  return candidates.size() == 1 ? candidates.front()->name : "";
}

// True once every policy of a kUntilSelected scan has met an entry it would pick: a later index
// can no longer change any choice, since NCCL's rule takes the lowest.
bool everyChoiceFound(const GidScan& scan, const NamespaceAddresses& addresses,
                      std::vector<bool>& found, const GidEntry& entry) {
  bool all = true;
  for (size_t i = 0; i < scan.selecting.size(); ++i) {
    found[i] =
        found[i] || (gidQualifies(entry, scan.selecting[i]) && gidInNamespace(entry, addresses));
    all = all && found[i];
  }
  return all;
}

void readGids(int port_fd, const std::string& rel, const GidScan& scan,
              const NamespaceAddresses& addresses, Port& port, Warnings& warnings) {
  DirFd gids(port_fd, "gids");
  const auto names = gids.ok() ? listDirectoryAt(gids.get(), ".") : std::nullopt;
  if (!names) {
    warnings.push_back({rel + "/gids", "cannot list the GID table"});
    return;
  }
  port.gid_table_len = static_cast<uint32_t>(names->size());
  DirFd types(port_fd, "gid_attrs/types");
  DirFd ndevs(port_fd, "gid_attrs/ndevs");
  char name[16];
  const bool first_only =
      scan.tables == GidTables::kFirstOnly ||
      (scan.tables == GidTables::kUntilSelected && port.link_layer != LinkLayer::kEthernet);
  // GID 0 alone still names the port's netdev (RoCE ndevs, IB port GUID).
  const uint32_t count =
      first_only ? std::min<uint32_t>(port.gid_table_len, 1) : port.gid_table_len;
  std::vector<bool> found(scan.selecting.size(), false);
  for (uint32_t i = 0; i < count; ++i) {
    const auto [end, ec] = std::to_chars(name, name + sizeof(name) - 1, i);
    *end = '\0';
    auto text = readAttributeAt(gids.get(), name);
    if (!text) {
      warnings.push_back({rel + "/gids/" + name, text.error().message});
      continue;
    }
    auto gid = parseGid(*text);
    if (!gid) {
      warnings.push_back({rel + "/gids/" + name, gid.error().message});
      continue;
    }
    if (isZero(*gid)) {
      continue;
    }
    GidEntry entry;
    entry.index = i;
    entry.gid = toKernelText(*gid);
    entry.ipv4 = ipv4Of(*gid).value_or("");
    // EINVAL on types/ndevs is the kernel's answer for entries without that attribute.
    if (auto type_text = readAttributeAt(types.get(), name)) {
      auto type = parseGidType(*type_text);
      if (!type) {
        warnings.push_back({rel + "/gid_attrs/types/" + name, type.error().message});
        continue;
      }
      entry.type = *type;
    }
    if (auto ndev = readAttributeAt(ndevs.get(), name)) {
      entry.netdev = std::move(*ndev);
    }
    port.gids.push_back(std::move(entry));
    if (scan.tables == GidTables::kUntilSelected &&
        everyChoiceFound(scan, addresses, found, port.gids.back())) {
      break;
    }
  }
}

Port readPort(int ports_fd, const std::string& rel, uint32_t number, const GidScan& scan,
              const NamespaceAddresses& addresses, Warnings& warnings) {
  Port port;
  port.number = number;
  DirFd fd(ports_fd, std::to_string(number));
  readParsed(fd.get(), rel, "state", warnings, parsePortState, port.state);
  PhysState phys;
  readParsed(fd.get(), rel, "phys_state", warnings, parsePhysState, phys);
  port.phys_state = phys.code;
  port.phys_state_name = phys.name;
  readParsed(fd.get(), rel, "link_layer", warnings, parseLinkLayer, port.link_layer);
  if (auto rate = readOrWarn(fd.get(), rel, "rate", warnings)) {
    auto gbps = parseRateGbps(*rate);
    if (gbps) {
      port.rate = std::move(*rate);
      port.rate_gbps = *gbps;
    } else {
      warnings.push_back({rel + "/rate", gbps.error().message});
    }
  }
  readParsed(fd.get(), rel, "lid", warnings, parseLid, port.lid);
  readGids(fd.get(), rel, scan, addresses, port, warnings);
  return port;
}

// `fn` is the device's open "device" directory (its PCI function).
void readPciFacts(int fn, const std::string& rel, const std::string& resolved_root,
                  const std::string& abs_dev, RdmaDevice& d, Warnings& warnings) {
  const std::string drel = rel + "/device";
  if (auto path = resolvePciePath(resolved_root, abs_dev + "/device", fn)) {
    d.pcie_path = std::move(*path);
    d.pci_address = d.pcie_path.back();
  } else {
    warnings.push_back({drel, path.error().message});
  }
  readParsed(fn, drel, "vendor", warnings, asText, d.vendor_id);
  readParsed(fn, drel, "device", warnings, asText, d.device_id);
  readParsed(fn, drel, "numa_node", warnings, parseNumaNode, d.numa_node);
  readParsed(fn, drel, "local_cpulist", warnings, asText, d.local_cpulist);
  if (auto driver = readLinkBase(fn, "driver")) {
    d.driver = *driver;
  } else {
    warnings.push_back({drel + "/driver", "no driver link"});
  }
  if (auto physfn = readLinkBase(fn, "physfn")) {
    d.is_vf = true;
    d.pf_pci_address = *physfn;
  }
  std::map<uint32_t, std::string> vfs; // by VF number, virtfn0 first
  for (const auto& entry : listDirectoryAt(fn, ".").value_or(std::vector<std::string>{})) {
    if (entry.rfind("virtfn", 0) != 0) {
      continue;
    }
    const auto n = parseWhole<uint32_t>(entry.substr(6));
    const auto target = readLinkBase(fn, entry.c_str());
    if (n && target) {
      vfs.emplace(*n, *target);
    }
  }
  for (auto& [number, address] : vfs) {
    d.vf_pci_addresses.push_back(std::move(address));
  }
}

// Each RDMA device's uverbs device, by the ibdev attribute of class/infiniband_verbs/uverbsN, as
// libibverbs finds them. That class lists software devices too (rxe, siw), whose uverbs device
// sits under devices/virtual rather than under a PCI function.
std::map<std::string, std::string> readUverbsDevices(int root_fd, Warnings& warnings) {
  std::map<std::string, std::string> by_device;
  DirFd klass(root_fd, "class/infiniband_verbs");
  if (!klass.ok()) {
    return by_device; // no uverbs module: no device has a node, which the health check reports
  }
  auto names = listDirectoryAt(klass.get(), ".").value_or(std::vector<std::string>{});
  std::sort(names.begin(), names.end(), naturalLess);
  for (const auto& name : names) {
    if (name.rfind("uverbs", 0) != 0) {
      continue; // abi_version
    }
    if (auto ibdev = readAttributeAt(klass.get(), (name + "/ibdev").c_str())) {
      by_device.emplace(std::move(*ibdev), name); // the lowest uverbsN of a device wins
    } else {
      warnings.push_back({"class/infiniband_verbs/" + name + "/ibdev", ibdev.error().message});
    }
  }
  return by_device;
}

std::optional<RdmaDevice> readDevice(int class_fd, const std::string& resolved_root,
                                     const std::string& name, const GidScan& scan,
                                     const NamespaceAddresses& addresses,
                                     const std::map<std::string, std::string>& uverbs_by_device,
                                     Warnings& warnings) {
  const std::string rel = "class/infiniband/" + name;
  DirFd dev(class_fd, name);
  if (!dev.ok()) {
    warnings.push_back({rel, "cannot open: " + std::string(std::strerror(errno))});
    return std::nullopt;
  }
  RdmaDevice d;
  d.name = name;
  readParsed(dev.get(), rel, "node_guid", warnings, asText, d.node_guid);
  readParsed(dev.get(), rel, "fw_ver", warnings, asText, d.fw_ver);
  if (auto uverbs = uverbs_by_device.find(name); uverbs != uverbs_by_device.end()) {
    d.uverbs = uverbs->second;
  }
  std::vector<std::string> netdev_names;
  DirFd fn(dev.get(), "device");
  if (fn.ok()) {
    readParsed(dev.get(), rel, "hca_type", warnings, asText, d.hca_type);
    readParsed(dev.get(), rel, "board_id", warnings, asText, d.board_id);
    readPciFacts(fn.get(), rel, resolved_root, resolved_root + "/" + rel, d, warnings);
    netdev_names = listDirectoryAt(fn.get(), "net").value_or(std::vector<std::string>{});
    std::sort(netdev_names.begin(), netdev_names.end(), naturalLess);
  } else if (auto parent = readAttributeAt(dev.get(), "parent")) {
    // A software device (rxe, siw): no PCI function, no hca_type or board_id; its netdev is
    // its parent.
    netdev_names.push_back(std::move(*parent));
  } else {
    warnings.push_back({rel + "/device", "no PCI function and no parent netdev"});
  }
  d.netdevs = netdev_names;

  DirFd ports(dev.get(), "ports");
  std::vector<uint32_t> numbers;
  for (const auto& p : listDirectoryAt(ports.get(), ".").value_or(std::vector<std::string>{})) {
    if (auto n = parseWhole<uint32_t>(p)) {
      numbers.push_back(*n);
    }
  }
  if (numbers.empty()) {
    warnings.push_back({rel + "/ports", "no ports"});
  }
  std::sort(numbers.begin(), numbers.end());
  std::vector<NetdevInfo> netdevs;
  for (uint32_t n : numbers) {
    Port port =
        readPort(ports.get(), rel + "/ports/" + std::to_string(n), n, scan, addresses, warnings);
    if (netdevs.empty() && !netdev_names.empty()) {
      netdevs = readNetdevs(fn.get(), netdev_names);
    }
    port.netdev = portNetdev(port, netdevs);
    d.ports.push_back(std::move(port));
  }
  return d;
}

bool isGpu(const std::string& vendor, const std::string& klass) {
  // NVIDIA, class display: VGA (0x0300xx) or 3D controller (0x0302xx).
  return vendor == "0x10de" && (klass.rfind("0x0300", 0) == 0 || klass.rfind("0x0302", 0) == 0);
}

std::vector<GpuDevice> discoverGpus(const std::string& resolved_root, Warnings& warnings) {
  std::vector<GpuDevice> gpus;
  DirFd bus(resolved_root + "/bus/pci/devices");
  if (!bus.ok()) {
    warnings.push_back({"bus/pci/devices", "cannot open: " + std::string(std::strerror(errno))});
    return gpus;
  }
  for (const auto& bdf : listDirectoryAt(bus.get(), ".").value_or(std::vector<std::string>{})) {
    // Most functions are not NVIDIA's: read their vendor without opening their directory.
    auto vendor = readAttributeAt(bus.get(), (bdf + "/vendor").c_str());
    if (!vendor || *vendor != "0x10de") {
      continue;
    }
    DirFd fn(bus.get(), bdf);
    const std::string rel = "bus/pci/devices/" + bdf;
    auto klass = readOrWarn(fn.get(), rel, "class", warnings);
    if (!klass || !isGpu(*vendor, *klass)) {
      continue;
    }
    GpuDevice gpu;
    gpu.pci_address = bdf;
    readParsed(fn.get(), rel, "device", warnings, asText, gpu.device_id);
    readParsed(fn.get(), rel, "numa_node", warnings, parseNumaNode, gpu.numa_node);
    if (auto path = resolvePciePath(resolved_root, resolved_root + "/" + rel, fn.get())) {
      gpu.pcie_path = std::move(*path);
    } else {
      warnings.push_back({rel, path.error().message});
    }
    gpus.push_back(std::move(gpu));
  }
  std::ranges::sort(gpus, {}, &GpuDevice::pci_address);
  return gpus;
}

} // namespace

bool naturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = a[i] >= '0' && a[i] <= '9';
    const bool db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      size_t ei = i, ej = j;
      while (ei < a.size() && a[ei] >= '0' && a[ei] <= '9') {
        ++ei;
      }
      while (ej < b.size() && b[ej] >= '0' && b[ej] <= '9') {
        ++ej;
      }
      // Compare digit runs by value: strip leading zeros, then length, then text.
      const size_t zi = std::min(a.find_first_not_of('0', i), ei);
      const size_t zj = std::min(b.find_first_not_of('0', j), ej);
      if (ei - zi != ej - zj) {
        return ei - zi < ej - zj;
      }
      if (const int c = a.compare(zi, ei - zi, b, zj, ej - zj); c != 0) {
        return c < 0;
      }
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) {
        return a[i] < b[j];
      }
      ++i;
      ++j;
    }
  }
  if (a.size() - i != b.size() - j) {
    return a.size() - i < b.size() - j;
  }
  return a < b;
}

NodeTopology discoverFromSysfs(const DiscoveryRoots& roots, const GidScan& scan) {
  NodeTopology topo;
  topo.source = "sysfs";
  Warnings& warnings = topo.warnings;
  // Before the GID tables: a kUntilSelected scan stops at the namespace's own entry.
  auto addresses = readNamespaceAddresses(roots.proc_root);
  if (addresses) {
    topo.addresses = std::move(*addresses);
  }
  char buf[PATH_MAX];
  const std::string resolved_root =
      ::realpath(roots.sysfs_root.c_str(), buf) != nullptr ? std::string(buf) : roots.sysfs_root;

  DirFd root(resolved_root);
  DirFd klass = root.ok() ? DirFd(root.get(), "class/infiniband") : DirFd();
  if (!root.ok()) {
    warnings.push_back(
        {roots.sysfs_root, "cannot open the sysfs root: " + std::string(std::strerror(errno))});
  } else if (!klass.ok()) {
    warnings.push_back(
        {"class/infiniband",
         "no RDMA devices: " + std::string(std::strerror(errno)) + " under " + roots.sysfs_root});
  } else {
    const auto uverbs_by_device = readUverbsDevices(root.get(), warnings);
    auto names = listDirectoryAt(klass.get(), ".").value_or(std::vector<std::string>{});
    std::sort(names.begin(), names.end(), naturalLess);
    for (const auto& name : names) {
      if (auto device = readDevice(klass.get(), resolved_root, name, scan, topo.addresses,
                                   uverbs_by_device, warnings)) {
        topo.devices.push_back(std::move(*device));
      }
    }
  }
  if (!addresses) {
    warnings.push_back({roots.proc_root + "/net/fib_trie", addresses.error().message});
  }
  topo.gpus = discoverGpus(resolved_root, warnings);
  if (auto netdev = findDefaultRouteNetdev(roots.proc_root)) {
    topo.management_netdev = std::move(*netdev);
  } else {
    warnings.push_back({roots.proc_root + "/net/route", netdev.error().message});
  }
  return topo;
}

NodeTopology discoverPorts(const DiscoveryRoots& roots,
                           const std::vector<std::pair<std::string, uint32_t>>& ports,
                           const GidScan& scan) {
  NodeTopology topo;
  topo.source = "sysfs";
  if (auto addresses = readNamespaceAddresses(roots.proc_root)) {
    topo.addresses = std::move(*addresses);
  } else {
    topo.warnings.push_back({roots.proc_root + "/net/fib_trie", addresses.error().message});
  }
  DirFd klass(roots.sysfs_root + "/class/infiniband");
  for (const auto& [name, number] : ports) {
    const std::string rel = "class/infiniband/" + name + "/ports";
    DirFd device_ports(klass.get(), name + "/ports");
    if (!device_ports.ok() ||
        ::faccessat(device_ports.get(), std::to_string(number).c_str(), F_OK, 0) != 0) {
      topo.warnings.push_back({rel + "/" + std::to_string(number), "no such port"});
      continue;
    }
    if (topo.devices.empty() || topo.devices.back().name != name) {
      topo.devices.push_back(RdmaDevice{});
      topo.devices.back().name = name;
    }
    topo.devices.back().ports.push_back(readPort(device_ports.get(),
                                                 rel + "/" + std::to_string(number), number, scan,
                                                 topo.addresses, topo.warnings));
  }
  return topo;
}

std::set<std::string> listRdmaDeviceNames(const std::string& sysfs_root) {
  auto names = listDirectory(sysfs_root + "/class/infiniband");
  return {names.begin(), names.end()};
}

namespace {

// The whole text of an attribute through an open descriptor: kernfs makes it anew on each read
// from offset 0.
std::optional<std::string> preadText(int fd) {
  char buf[64];
  const ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
  return n < 0 ? std::nullopt
               : std::optional<std::string>(std::in_place, buf, static_cast<size_t>(n));
}

// The state text through a held descriptor, opened (again) when there is none, it was unlinked or
// its read fails; -1 in `fd` and nullopt when the file cannot be read.
std::optional<std::string> rereadState(int& fd, const std::string& path) {
  struct stat st {};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && st.st_nlink > 0) {
    if (auto text = preadText(fd)) {
      return text;
    }
  }
  if (fd >= 0) {
    ::close(fd);
  }
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  auto text = fd >= 0 ? preadText(fd) : std::nullopt;
  if (!text && fd >= 0) {
    ::close(fd);
    fd = -1;
  }
  return text;
}

} // namespace

PortStateFiles::~PortStateFiles() {
  for (const auto& entry : open_) {
    ::close(entry.second);
  }
}

std::vector<PortStateSample> PortStateFiles::read(const NodeTopology& known,
                                                  const std::set<std::string>& listed) {
  std::map<std::pair<std::string, uint32_t>, int> still_open;
  std::vector<PortStateSample> out;
  for (const auto& device : known.devices) {
    const bool present = listed.count(device.name) > 0;
    for (const auto& port : device.ports) {
      PortStateSample sample{device.name, port.number, present, PortState::kNop};
      if (present) {
        auto key = std::make_pair(device.name, port.number);
        int fd = -1;
        if (auto held = open_.find(key); held != open_.end()) {
          fd = held->second;
          open_.erase(held);
        }
        const std::string path = sysfs_root_ + "/class/infiniband/" + device.name + "/ports/" +
                                 std::to_string(port.number) + "/state";
        // A state that does not parse leaves kNop: present but not usable.
        if (auto text = rereadState(fd, path)) {
          if (auto state = parsePortState(*text)) {
            sample.state = *state;
          }
        }
        if (fd >= 0) {
          still_open.emplace(std::move(key), fd);
        }
      }
      out.push_back(std::move(sample));
    }
  }
  for (const auto& entry : open_) {
    ::close(entry.second);
  }
  open_ = std::move(still_open);
  return out;
}

std::vector<PortStateSample> readPortStates(const std::string& sysfs_root,
                                            const NodeTopology& known) {
  return PortStateFiles(sysfs_root).read(known, listRdmaDeviceNames(sysfs_root));
}

} // namespace kube_rdma
