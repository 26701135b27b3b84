#include "common/node_checks.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <set>
#include <sstream>

#include "common/pools.h"
#include "common/strings.h"
#include "common/topology.h"

namespace kube_rdma {
namespace {

// A failure outweighs a warning, which outweighs not knowing.
Verdict worse(Verdict a, Verdict b) {
  for (Verdict v : {Verdict::kFail, Verdict::kWarn, Verdict::kUnknown}) {
    if (a == v || b == v) {
      return v;
    }
  }
  return Verdict::kOk;
}

std::string trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\n");
  const size_t end = text.find_last_not_of(" \t\n");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

std::optional<uint64_t> parseUnsigned(const std::string& text) {
  const std::string t = trimmed(text);
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) {
    return std::nullopt;
  }
  return value;
}

// A file's first line: the value of an attribute, the line that matters of a version file.
Evidence evidenceOf(const FileRead& file) {
  return {file.path, file.text ? trimmed(file.text->substr(0, file.text->find('\n'))) : "(absent)"};
}

// The evidence of files a check read; a FileRead without a path (a fact the caller did not
// supply) is left out.
std::vector<Evidence> evidenceOf(std::initializer_list<const FileRead*> files) {
  std::vector<Evidence> out;
  for (const FileRead* f : files) {
    if (!f->path.empty()) {
      out.push_back(evidenceOf(*f));
    }
  }
  return out;
}

const PciFunctionFiles* pciFiles(const NodeSnapshot& snapshot, const std::string& address) {
  const auto it = snapshot.pci.find(address);
  return it == snapshot.pci.end() ? nullptr : &it->second;
}

std::string portName(const HcaPort& port) {
  return port.device + ":" + std::to_string(port.port);
}

std::string portAttributePath(const NodeSnapshot& snapshot, const HcaPort& port,
                              const std::string& attribute) {
  return snapshot.sysfs_root + "/class/infiniband/" + port.device + "/ports/" +
         std::to_string(port.port) + "/" + attribute;
}

// A PCI function whose link the checks judge: every HCA that is a PCI function of its own
// (SR-IOV VFs share their PF's link; software devices have none) and every GPU.
struct LinkEnd {
  std::string label; // "mlx5_1 (0000:13:00.0)", "GPU 0000:12:00.0"
  std::string address;
  bool gpu = false;
};

std::vector<LinkEnd> linkEnds(const NodeTopology& topology) {
  std::vector<LinkEnd> ends;
  std::set<std::string> seen;
  for (const auto& d : topology.devices) {
    if (!d.is_vf && !d.pci_address.empty() && seen.insert(d.pci_address).second) {
      ends.push_back({d.name + " (" + d.pci_address + ")", d.pci_address, false});
    }
  }
  for (const auto& g : topology.gpus) {
    ends.push_back({"GPU " + g.pci_address, g.pci_address, true});
  }
  return ends;
}

// The RoCE ports the configured pools take, with their netdevs.
std::vector<std::pair<HcaPort, std::string>> roceDataPorts(const NodeTopology& topology,
                                                           const PluginConfig& config) {
  std::vector<std::pair<HcaPort, std::string>> out;
  for (const auto& pool : buildPools(topology, config)) {
    for (const auto& hp : pool.ports()) {
      const RdmaDevice* device = topology.findDevice(hp.device);
      for (const auto& p : device->ports) {
        if (p.number == hp.port && p.link_layer == LinkLayer::kEthernet && !p.netdev.empty()) {
          out.emplace_back(hp, p.netdev);
        }
      }
    }
  }
  return out;
}

// "0-7", "3", "none": the enabled priorities of one ECN side.
std::string prioritiesText(const std::map<int, FileRead>& side) {
  std::vector<std::string> on;
  for (const auto& [prio, file] : side) {
    if (file.text && trimmed(*file.text) == "1") {
      on.push_back(std::to_string(prio));
    }
  }
  if (on.empty()) {
    return "none";
  }
  return on.size() == side.size() && side.size() > 1 ? on.front() + "-" + on.back()
                                                     : joinStrings(on, ",");
}

// Bridges a GPU<->HCA transfer crosses: below their deepest shared PCI ancestor on both sides,
// the ancestor itself, or both root ports when they share none.
std::vector<std::string> bridgesBetween(const std::vector<std::string>& a,
                                        const std::vector<std::string>& b) {
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) {
    ++common;
  }
  std::vector<std::string> out;
  const size_t from = common == 0 ? 0 : common - 1;
  for (size_t i = from; i + 1 < a.size(); ++i) {
    out.push_back(a[i]);
  }
  for (size_t i = std::max<size_t>(from, common); i + 1 < b.size(); ++i) {
    out.push_back(b[i]);
  }
  return out;
}

// The first line of a /proc file that starts with `prefix`, "" when there is none.
std::string lineStartingWith(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) {
      return line;
    }
  }
  return "";
}

// "nvidia_peermem or nv_peer_mem" with " or "
std::string peerMemoryNames(std::string_view separator) {
  return joinStrings({std::begin(kPeerMemoryModules), std::end(kPeerMemoryModules)}, separator);
}

// The first of kPeerMemoryModules that is loaded (its <sys>/module directory is there or it has a
// /proc/modules line), "" when none is, with the evidence either way.
struct PeerMemory {
  std::string module;
  std::vector<Evidence> evidence;
};
PeerMemory loadedPeerMemory(const NodeSnapshot& snapshot) {
  PeerMemory none;
  for (const char* module : kPeerMemoryModules) {
    const auto dir = snapshot.peermem_modules.find(module);
    const bool present = dir != snapshot.peermem_modules.end() && dir->second.text;
    const std::string line =
        lineStartingWith(snapshot.proc_modules.text.value_or(""), std::string(module) + " ");
    if (present || !line.empty()) {
      PeerMemory found{module, {}};
      if (present) {
        found.evidence.push_back(evidenceOf(dir->second));
      }
      if (!line.empty()) {
        found.evidence.push_back({snapshot.proc_modules.path, line});
      }
      return found;
    }
    if (dir != snapshot.peermem_modules.end() && !dir->second.path.empty()) {
      none.evidence.push_back(evidenceOf(dir->second));
    }
  }
  if (snapshot.proc_modules.text) {
    none.evidence.push_back(
        {snapshot.proc_modules.path, "no " + peerMemoryNames(" or ") + " line"});
  }
  return none;
}

// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build ..." ->
// "535.104.05": the first word shaped like a version.
std::string driverVersionOf(const std::string& proc_version) {
  std::istringstream words(proc_version.substr(0, proc_version.find('\n')));
  for (std::string word; words >> word;) {
    if (word.find('.') != std::string::npos &&
        word.find_first_not_of("0123456789.") == std::string::npos && word[0] != '.') {
      return word;
    }
  }
  return "";
}

std::string bytesText(uint64_t bytes) {
  if (bytes >= (1ull << 20)) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  return std::to_string(bytes >> 10) + " KiB";
}

// "Max locked memory         65536                8388608              bytes": the soft limit,
// nullopt for unlimited; an error text when the row is missing or malformed.
struct SoftLimit {
  bool found = false;
  std::optional<uint64_t> bytes; // nullopt: unlimited
  std::string row;
};
SoftLimit memlockRow(const std::string& limits) {
  const std::string name = "Max locked memory";
  const std::string line = lineStartingWith(limits, name);
  if (line.empty()) {
    return {};
  }
  SoftLimit out;
  out.row = trimmed(line);
  std::istringstream words(line.substr(name.size()));
  std::string soft;
  words >> soft;
  if (soft == "unlimited") {
    out.found = true;
  } else if (auto value = parseUnsigned(soft)) {
    out.found = true;
    out.bytes = *value;
  }
  return out;
}

// A "Name:\tv1\tv2..." row of /proc/<pid>/status, its words.
std::vector<std::string> statusRow(const std::string& status, const std::string& name) {
  const std::string line = lineStartingWith(status, name + ":");
  std::istringstream words(line.empty() ? "" : line.substr(name.size() + 1));
  return {std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
}

} // namespace

std::string toString(Verdict verdict) {
  switch (verdict) {
  case Verdict::kOk:
    return "ok";
  case Verdict::kWarn:
    return "warn";
  case Verdict::kFail:
    return "fail";
  case Verdict::kUnknown:
    break;
  }
  return "unknown";
}

std::optional<int> rdmaCoreVersionOf(const std::string& libibverbs_file) {
  const std::string name = libibverbs_file.substr(libibverbs_file.rfind('/') + 1);
  const std::string prefix = "libibverbs.so.1.";
  if (name.rfind(prefix, 0) != 0) {
    return std::nullopt;
  }
  // 1.<abi>.<rdma-core>.0
  std::istringstream parts(name.substr(prefix.size()));
  std::string abi;
  std::string version;
  if (!std::getline(parts, abi, '.') || !std::getline(parts, version, '.')) {
    return std::nullopt;
  }
  const auto parsed = parseUnsigned(version);
  return parsed && parseUnsigned(abi) ? std::optional<int>(static_cast<int>(*parsed))
                                      : std::nullopt;
}

std::optional<std::pair<int, int>> kernelVersionOf(const std::string& osrelease) {
  int major = 0;
  int minor = 0;
  const std::string t = trimmed(osrelease);
  const char* end = t.data() + t.size();
  const auto first = std::from_chars(t.data(), end, major);
  if (first.ec != std::errc() || first.ptr == end || *first.ptr != '.') {
    return std::nullopt;
  }
  const auto second = std::from_chars(first.ptr + 1, end, minor);
  if (second.ec != std::errc()) {
    return std::nullopt;
  }
  return std::pair<int, int>{major, minor};
}

std::optional<double> parseLinkSpeed(const std::string& text) {
  const std::string t = trimmed(text);
  const size_t unit = t.find(" GT/s");
  if (unit == std::string::npos || unit == 0) {
    return std::nullopt;
  }
  const std::string number = t.substr(0, unit);
  if (number.find_first_not_of("0123456789.") != std::string::npos) {
    return std::nullopt;
  }
  return std::strtod(number.c_str(), nullptr);
}

AcsControl findAcsControl(const std::string& config) {
  constexpr size_t kExtendedStart = 0x100;
  constexpr uint16_t kAcsCapabilityId = 0x000D;
  const auto u32 = [&config](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) {
      v |= static_cast<uint32_t>(static_cast<uint8_t>(config[at + i])) << (8 * i);
    }
    return v;
  };
  if (config.size() < kExtendedStart + 4) {
    return {AcsControl::Found::kTruncated, 0};
  }
  size_t offset = kExtendedStart;
  // Each capability is at least 4 bytes from 0x100 to 0xfff: a longer chain loops.
  for (int hops = 0; hops < 960; ++hops) {
    const uint32_t header = u32(offset);
    if (header == 0 || header == 0xffffffffu) {
      break;
    }
    if ((header & 0xffffu) == kAcsCapabilityId) {
      if (offset + 8 > config.size()) {
        return {AcsControl::Found::kTruncated, 0};
      }
      return {AcsControl::Found::kControl, static_cast<uint16_t>(u32(offset + 4) >> 16)};
    }
    const size_t next = (header >> 20) & 0xffc;
    if (next < kExtendedStart || next + 4 > config.size()) {
      break;
    }
    offset = next;
  }
  return {AcsControl::Found::kAbsent, 0};
}

std::string acsBitsText(uint16_t control) {
  static constexpr std::pair<uint16_t, const char*> kBits[] = {
      {kAcsSourceValidation, "SV"},    {kAcsTranslationBlocking, "TB"},
      {kAcsP2pRequestRedirect, "RR"},  {kAcsP2pCompletionRedirect, "CR"},
      {kAcsUpstreamForwarding, "UF"},  {kAcsP2pEgressControl, "EC"},
      {kAcsDirectTranslatedP2p, "DT"},
  };
  std::vector<std::string> set;
  for (const auto& [bit, name] : kBits) {
    if (control & bit) {
      set.emplace_back(name);
    }
  }
  return set.empty() ? "none" : joinStrings(set, ",");
}

Check checkPcieLinks(const NodeTopology& topology, const NodeSnapshot& snapshot) {
  Check check{"pcie-link", Verdict::kOk, "", "", {}};
  const auto ends = linkEnds(topology);
  if (ends.empty()) {
    check.detail = "no PCI HCAs or GPUs";
    return check;
  }
  std::vector<std::string> problems;
  std::vector<Evidence> all; // shown when every link is fine; else only the problems'
  for (const auto& end : ends) {
    const PciFunctionFiles* files = pciFiles(snapshot, end.address);
    if (files == nullptr) {
      check.verdict = worse(check.verdict, Verdict::kUnknown);
      problems.push_back(end.label + ": not read");
      continue;
    }
    std::vector<Evidence> read;
    for (const FileRead* f : {&files->current_link_width, &files->max_link_width,
                              &files->current_link_speed, &files->max_link_speed}) {
      read.push_back(evidenceOf(*f));
    }
    all.insert(all.end(), read.begin(), read.end());
    const size_t problems_before = problems.size();
    const auto width = parseUnsigned(files->current_link_width.text.value_or(""));
    const auto max_width = parseUnsigned(files->max_link_width.text.value_or(""));
    const auto speed = parseLinkSpeed(files->current_link_speed.text.value_or(""));
    const auto max_speed = parseLinkSpeed(files->max_link_speed.text.value_or(""));
    if (!width || !max_width || !speed || !max_speed) {
      check.verdict = worse(check.verdict, Verdict::kUnknown);
      problems.push_back(end.label + ": link attributes absent or unreadable");
    } else {
      if (*width < *max_width) {
        check.verdict = Verdict::kFail;
        problems.push_back(end.label + " trained at x" + std::to_string(*width) + " of x" +
                           std::to_string(*max_width));
      }
      if (*speed < *max_speed) {
        // GPUs lower their link speed when idle; a slow HCA link stays slow.
        check.verdict = worse(check.verdict, end.gpu ? Verdict::kWarn : Verdict::kFail);
        problems.push_back(end.label + " runs at " + trimmed(*files->current_link_speed.text) +
                           " of " + trimmed(*files->max_link_speed.text) +
                           (end.gpu ? " (an idle GPU lowers its speed)" : ""));
      }
    }
    if (problems.size() > problems_before) {
      check.evidence.insert(check.evidence.end(), read.begin(), read.end());
    }
  }
  if (problems.empty()) {
    check.evidence = std::move(all);
  }
  check.detail = problems.empty() ? "every HCA and GPU link at its full width and speed (" +
                                        std::to_string(ends.size()) + " PCI functions)"
                                  : joinStrings(problems, "; ");
  if (check.verdict == Verdict::kFail || check.verdict == Verdict::kWarn) {
    check.hint = "reseat the card or move it to a slot wired for its full width; check the "
                 "BIOS's PCIe generation setting (lspci -vv: LnkSta against LnkCap)";
  }
  return check;
}

Check checkPcieAcs(const NodeTopology& topology, const NodeSnapshot& snapshot) {
  Check check{"pcie-acs", Verdict::kOk, "", "", {}};
  if (topology.gpus.empty()) {
    check.detail = "no GPUs";
    return check;
  }
  std::vector<std::string> redirecting;
  std::vector<std::string> unreadable;
  std::set<std::string> judged;
  std::vector<Evidence> fine; // the evidence when nothing is wrong
  for (const auto& gpu : topology.gpus) {
    for (const auto& name : closestHcas(gpu, topology)) {
      const RdmaDevice* hca = topology.findDevice(name);
      for (const auto& bridge : bridgesBetween(gpu.pcie_path, hca->pcie_path)) {
        if (!judged.insert(bridge).second) {
          continue;
        }
        const PciFunctionFiles* files = pciFiles(snapshot, bridge);
        if (files == nullptr || !files->config.text) {
          unreadable.push_back(bridge + " (config not read)");
          continue;
        }
        const AcsControl acs = findAcsControl(*files->config.text);
        if (acs.found == AcsControl::Found::kTruncated) {
          const std::string size = std::to_string(files->config.text->size()) + " bytes";
          check.evidence.push_back({files->config.path, size}); // binary: its size, not its bytes
          unreadable.push_back(bridge + " (config space stops at " + size + ")");
          continue;
        }
        if (acs.found == AcsControl::Found::kAbsent) {
          fine.push_back({files->config.path, "no ACS capability"});
          continue;
        }
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%04x", acs.control);
        const Evidence read{files->config.path, std::string("ACS control ") + hex + " (" +
                                                    acsBitsText(acs.control) + ")"};
        constexpr uint16_t kRedirects =
            kAcsP2pRequestRedirect | kAcsP2pCompletionRedirect | kAcsUpstreamForwarding;
        if (!(acs.control & kRedirects)) {
          fine.push_back(read);
        } else {
          check.evidence.push_back(read);
          redirecting.push_back(bridge + " (" + acsBitsText(acs.control & kRedirects) +
                                ", between GPU " + gpu.pci_address + " and " + name + ")");
        }
      }
    }
  }
  if (redirecting.empty() && unreadable.empty()) {
    check.evidence = std::move(fine);
  }
  std::vector<std::string> parts;
  if (!redirecting.empty()) {
    check.verdict = Verdict::kWarn;
    parts.push_back("ACS redirects peer-to-peer traffic through the root complex at " +
                    joinStrings(redirecting, ", "));
    check.hint = "disable ACS redirection on these bridges (BIOS, or setpci at boot) so "
                 "GPUDirect RDMA goes straight from GPU to HCA; keep it where VMs need isolation";
  }
  if (!unreadable.empty()) {
    check.verdict = worse(check.verdict, Verdict::kUnknown);
    parts.push_back("ACS not readable at " + joinStrings(unreadable, ", ") +
                    ": the kernel returns only the first 64 bytes of config space without "
                    "CAP_SYS_ADMIN; run as root on the host to judge");
  }
  check.detail = parts.empty() ? "no bridge between a GPU and its closest HCA redirects "
                                 "peer-to-peer traffic (" +
                                     std::to_string(judged.size()) + " bridges)"
                               : joinStrings(parts, "; ");
  return check;
}

Check checkGpuDirect(const NodeTopology& topology, const NodeSnapshot& snapshot) {
  Check check{"gpudirect-rdma", Verdict::kOk, "", "", {}};
  if (topology.gpus.empty()) {
    check.detail = "no NVIDIA GPUs";
    return check;
  }
  const PeerMemory peer_memory = loadedPeerMemory(snapshot);
  check.evidence = peer_memory.evidence;
  const auto files =
      evidenceOf({&snapshot.nvidia_proc_version, &snapshot.nvidia_module_version,
                  &snapshot.nvidia_taint, &snapshot.osrelease, &snapshot.libibverbs});
  check.evidence.insert(check.evidence.end(), files.begin(), files.end());
  std::string driver = driverVersionOf(snapshot.nvidia_proc_version.text.value_or(""));
  if (driver.empty() && snapshot.nvidia_module_version.text) {
    driver = trimmed(*snapshot.nvidia_module_version.text);
  }
  const std::string driver_text = driver.empty() ? "driver version unknown" : "driver " + driver;
  if (!peer_memory.module.empty()) {
    check.detail = peer_memory.module + " is loaded (" + driver_text + ")";
    return check;
  }
  // dma-buf needs NVIDIA's open kernel module ("Dual MIT/GPL"; the proprietary one taints the
  // kernel with P), Linux >= 5.12 and rdma-core >= 34.
  std::optional<bool> open_module;
  if (snapshot.nvidia_proc_version.text) {
    open_module =
        snapshot.nvidia_proc_version.text->find("Open Kernel Module") != std::string::npos;
  } else if (snapshot.nvidia_taint.text) {
    open_module = snapshot.nvidia_taint.text->find('P') == std::string::npos;
  }
  const auto kernel = kernelVersionOf(snapshot.osrelease.text.value_or(""));
  const auto rdma_core = rdmaCoreVersionOf(snapshot.libibverbs.text.value_or(""));
  std::vector<std::string> missing;
  std::vector<std::string> unknown;
  if (!open_module) {
    unknown.push_back("which NVIDIA kernel module (not loaded?)");
  } else if (!*open_module) {
    missing.push_back("the NVIDIA kernel module is the proprietary one");
  }
  if (!kernel) {
    unknown.push_back("the kernel version");
  } else if (*kernel < kDmabufKernel) {
    missing.push_back("kernel " + trimmed(*snapshot.osrelease.text) + " is older than 5.12");
  }
  if (!rdma_core) {
    unknown.push_back("the rdma-core version");
  } else if (*rdma_core < kDmabufRdmaCore) {
    missing.push_back("rdma-core " + std::to_string(*rdma_core) + " is older than 34");
  }
  if (missing.empty() && unknown.empty()) {
    check.detail = "dma-buf: NVIDIA open kernel module (" + driver_text + "), kernel " +
                   trimmed(*snapshot.osrelease.text) + ", rdma-core " + std::to_string(*rdma_core);
    return check;
  }
  std::vector<std::string> parts{"neither " + peerMemoryNames(" nor ") + " is loaded"};
  parts.insert(parts.end(), missing.begin(), missing.end());
  if (!unknown.empty()) {
    parts.push_back("unknown: " + joinStrings(unknown, ", "));
  }
  check.detail = joinStrings(parts, "; ") + " (" + driver_text + ")";
  check.verdict = missing.empty() ? Verdict::kUnknown : Verdict::kWarn;
  check.hint = "modprobe nvidia_peermem (nv_peer_mem on MLNX_OFED's older stack), or use NVIDIA's "
               "open kernel module with Linux >= 5.12 and rdma-core >= 34 (dma-buf); without "
               "either NCCL copies through host memory";
  return check;
}

Check checkIommu(const NodeTopology& topology, const NodeSnapshot& snapshot) {
  Check check{"iommu", Verdict::kOk, "", "", {}};
  std::vector<std::string> translating;
  std::vector<Evidence> fine;
  size_t grouped = 0;
  for (const auto& end : linkEnds(topology)) {
    const PciFunctionFiles* files = pciFiles(snapshot, end.address);
    if (files == nullptr || !files->iommu_group_type.text) {
      continue;
    }
    ++grouped;
    const std::string type = trimmed(*files->iommu_group_type.text);
    if (type == "DMA" || type == "DMA-FQ") {
      translating.push_back(end.label + " (" + type + ")");
      check.evidence.push_back(evidenceOf(files->iommu_group_type));
    } else {
      fine.push_back(evidenceOf(files->iommu_group_type));
    }
  }
  if (grouped == 0) {
    check.detail = "no IOMMU group on the HCAs and GPUs (IOMMU off)";
    return check;
  }
  if (translating.empty()) {
    check.evidence = std::move(fine);
    check.detail = "the IOMMU passes the HCAs' and GPUs' DMA through (" + std::to_string(grouped) +
                   " PCI functions)";
    return check;
  }
  const std::string peer_memory = loadedPeerMemory(snapshot).module;
  check.verdict = peer_memory.empty() ? Verdict::kWarn : Verdict::kFail;
  check.detail =
      "the IOMMU translates DMA of " + joinStrings(translating, ", ") +
      (peer_memory.empty() ? "; GPU<->HCA peer-to-peer DMA pays for translation"
                           : "; " + peer_memory + " does not work through a translating IOMMU");
  check.hint = "boot with iommu=pt (intel_iommu=on iommu=pt, amd_iommu=pt) or set the groups' "
               "type to identity";
  return check;
}

Check checkRoceMtu(const NodeTopology& topology, const PluginConfig& config,
                   const NodeSnapshot& snapshot) {
  Check check{"roce-mtu", Verdict::kOk, "", "", {}};
  std::map<uint64_t, std::vector<std::string>> by_mtu;
  std::vector<std::string> unreadable;
  for (const auto& [port, netdev] : roceDataPorts(topology, config)) {
    const auto it = snapshot.netdevs.find(netdev);
    if (it == snapshot.netdevs.end()) {
      unreadable.push_back(netdev);
      continue;
    }
    check.evidence.push_back(evidenceOf(it->second.mtu));
    if (auto mtu = parseUnsigned(it->second.mtu.text.value_or(""))) {
      by_mtu[*mtu].push_back(netdev);
    } else {
      unreadable.push_back(netdev);
    }
  }
  if (by_mtu.empty() && unreadable.empty()) {
    check.detail = "no RoCE data ports";
    return check;
  }
  std::vector<std::string> groups;
  groups.reserve(by_mtu.size());
  for (const auto& [mtu, netdevs] : by_mtu) {
    groups.push_back("MTU " + std::to_string(mtu) + " on " + joinStrings(netdevs, ", "));
  }
  if (!unreadable.empty()) {
    check.verdict = Verdict::kUnknown;
    groups.push_back("MTU unreadable on " + joinStrings(unreadable, ", "));
  }
  check.detail = joinStrings(groups, "; ");
  if (by_mtu.size() > 1) {
    check.verdict = Verdict::kWarn;
    check.hint = "give every RoCE data netdev the same MTU (>= 4200 so a 4096-byte RoCE MTU fits)";
  } else if (!by_mtu.empty() && by_mtu.begin()->first < kSuggestedRoceMtu) {
    check.verdict = Verdict::kWarn;
    check.hint = "raise the RoCE netdevs' MTU to >= 4200 (9000 is usual) so RoCE can use its "
                 "4096-byte MTU, and match it on the switch";
  }
  return check;
}

Check checkRoceEcn(const NodeTopology& topology, const PluginConfig& config,
                   const NodeSnapshot& snapshot) {
  Check check{"roce-ecn", Verdict::kOk, "", "", {}};
  const auto data_ports = roceDataPorts(topology, config);
  if (data_ports.empty()) {
    check.detail = "no RoCE data ports";
    return check;
  }
  std::vector<std::string> reports;
  std::vector<std::string> absent;
  std::set<std::pair<std::string, std::string>> signatures;
  bool np_anywhere = false;
  bool rp_anywhere = false;
  for (const auto& [port, netdev] : data_ports) {
    const auto it = snapshot.netdevs.find(netdev);
    if (it == snapshot.netdevs.end() || (it->second.ecn_np.empty() && it->second.ecn_rp.empty())) {
      absent.push_back(netdev);
      continue;
    }
    const NetdevFiles& files = it->second;
    for (const auto* side : {&files.ecn_np, &files.ecn_rp}) {
      for (const auto& [prio, file] : *side) {
        check.evidence.push_back(evidenceOf(file));
      }
    }
    const std::string np = prioritiesText(files.ecn_np);
    const std::string rp = prioritiesText(files.ecn_rp);
    np_anywhere = np_anywhere || np != "none";
    rp_anywhere = rp_anywhere || rp != "none";
    signatures.insert({np, rp});
    reports.push_back(netdev + " np " + np + " rp " + rp);
  }
  if (reports.empty()) {
    check.verdict = Verdict::kUnknown;
    check.detail = "no ecn/roce_np and ecn/roce_rp files on " + joinStrings(absent, ", ") +
                   " (only MLNX_OFED/DOCA drivers expose them)";
    return check;
  }
  std::vector<std::string> parts{"ECN priorities enabled: " + joinStrings(reports, "; ")};
  if (!np_anywhere || !rp_anywhere) {
    check.verdict = Verdict::kWarn;
    parts.push_back(std::string("ECN ") + (!np_anywhere ? "notification (np)" : "reaction (rp)") +
                    " is disabled on every port");
  } else if (signatures.size() > 1) {
    check.verdict = Verdict::kWarn;
    parts.push_back("the ports differ");
  }
  if (!absent.empty()) {
    check.verdict = worse(check.verdict, Verdict::kUnknown);
    parts.push_back("no ecn files on " + joinStrings(absent, ", "));
  }
  check.detail = joinStrings(parts, "; ");
  if (check.verdict == Verdict::kWarn) {
    check.hint = "enable ECN (roce_np and roce_rp) on the RoCE traffic's priority on every port, "
                 "as the switches mark it; without it RoCE congestion control (DCQCN) is off";
  }
  return check;
}

Check checkFirmware(const NodeTopology& topology, const NodeSnapshot& snapshot) {
  Check check{"hca-firmware", Verdict::kOk, "", "", {}};
  // hca_type -> firmware -> devices
  std::map<std::string, std::map<std::string, std::vector<std::string>>> by_type;
  for (const auto& d : topology.devices) {
    if (d.is_vf || d.hca_type.empty()) {
      continue;
    }
    by_type[d.hca_type][d.fw_ver].push_back(d.name);
    check.evidence.push_back(
        {snapshot.sysfs_root + "/class/infiniband/" + d.name + "/fw_ver", d.fw_ver});
  }
  std::vector<std::string> drift;
  std::vector<std::string> same;
  for (const auto& [type, versions] : by_type) {
    if (versions.size() == 1) {
      same.push_back(type + " " + versions.begin()->first);
      continue;
    }
    std::vector<std::string> parts;
    for (const auto& [fw, devices] : versions) {
      parts.push_back(fw + " on " + joinStrings(devices, ", "));
    }
    drift.push_back(type + ": " + joinStrings(parts, "; "));
  }
  if (by_type.empty()) {
    check.detail = "no HCAs with a type";
  } else if (drift.empty()) {
    check.detail = "one firmware per HCA type: " + joinStrings(same, ", ");
  } else {
    check.verdict = Verdict::kWarn;
    check.detail = "HCAs of one type on different firmware: " + joinStrings(drift, " | ");
    check.hint = "flash the same firmware on every HCA of a type (mlxfwmanager); mixed firmware "
                 "behaves differently under load";
  }
  return check;
}

Check checkPoolRates(const NodeTopology& topology, const PluginConfig& config,
                     const NodeSnapshot& snapshot) {
  Check check{"pool-rates", Verdict::kOk, "", "", {}};
  std::vector<std::string> mixed;
  std::vector<std::string> uniform;
  for (const auto& pool : buildPools(topology, config)) {
    std::map<uint32_t, std::vector<std::string>> by_rate;
    for (const auto& hp : pool.ports()) {
      for (const auto& p : topology.findDevice(hp.device)->ports) {
        if (p.number == hp.port && p.active()) {
          by_rate[p.rate_gbps].push_back(portName(hp));
          check.evidence.push_back({portAttributePath(snapshot, hp, "rate"), p.rate});
        }
      }
    }
    if (by_rate.size() > 1) {
      std::vector<std::string> parts;
      parts.reserve(by_rate.size());
      for (const auto& [rate, ports] : by_rate) {
        parts.push_back(std::to_string(rate) + " Gb/s on " + joinStrings(ports, ", "));
      }
      mixed.push_back(pool.spec.resource_name + ": " + joinStrings(parts, "; "));
    } else if (by_rate.size() == 1) {
      uniform.push_back(pool.spec.resource_name + " " + std::to_string(by_rate.begin()->first) +
                        " Gb/s");
    }
  }
  if (!mixed.empty()) {
    check.verdict = Verdict::kWarn;
    check.detail = "ports of one pool at different rates: " + joinStrings(mixed, " | ");
    check.hint = "NCCL spreads traffic evenly, so the slowest port paces a collective; check "
                 "cables and switch ports of the slow ones, or split them into another pool";
  } else {
    check.detail = uniform.empty() ? "no ACTIVE pool ports"
                                   : "one rate per pool: " + joinStrings(uniform, ", ");
  }
  return check;
}

std::vector<Check> checkPools(const NodeTopology& topology, const PluginConfig& config,
                              const NodeSnapshot& snapshot) {
  std::vector<Check> checks;
  for (const auto& explained : explainPools(topology, config)) {
    const NodePool& pool = explained.pool;
    Check check{"pool:" + pool.spec.resource_name, Verdict::kOk, "", "", {}};
    std::vector<std::string> members;
    std::vector<std::string> unusable;
    for (const auto& hp : pool.ports()) {
      members.push_back(portName(hp));
      const RdmaDevice* device = topology.findDevice(hp.device);
      for (const auto& p : device->ports) {
        if (p.number == hp.port && !p.active()) {
          unusable.push_back(portName(hp) + " is " + toString(p.state));
          check.evidence.push_back({portAttributePath(snapshot, hp, "state"), toString(p.state)});
        }
      }
      if (device->uverbs.empty() || snapshot.uverbs_nodes.count(device->uverbs) == 0) {
        const std::string node = device->uverbs.empty()
                                     ? "no uverbs device"
                                     : snapshot.dev_root + "/infiniband/" + device->uverbs;
        unusable.push_back(portName(hp) + " has no uverbs node (" + node + ")");
        check.evidence.push_back({node, "(absent)"});
      }
    }
    // Why the other ports are not in the pool, one group per rule.
    std::vector<std::pair<std::string, std::vector<std::string>>> reasons;
    bool only_absent_kinds = true; // left out only because the node has no port of this kind
    for (const auto& left : explained.left_out) {
      const std::string why =
          left.rule == PoolRule::kEarlierPool ? "taken by " + left.taken_by : toString(left.rule);
      only_absent_kinds =
          only_absent_kinds && (left.rule == PoolRule::kManagement || left.rule == PoolRule::kVf ||
                                left.rule == PoolRule::kLinkLayer);
      auto it = std::find_if(reasons.begin(), reasons.end(),
                             [&](const auto& r) { return r.first == why; });
      if (it == reasons.end()) {
        reasons.emplace_back(why, std::vector<std::string>{});
        it = std::prev(reasons.end());
      }
      it->second.push_back(portName(left.port));
    }
    std::vector<std::string> left_text;
    left_text.reserve(reasons.size());
    for (const auto& [why, ports] : reasons) {
      left_text.push_back(why + ": " + joinStrings(ports, ", "));
    }
    std::vector<std::string> parts;
    parts.push_back(members.empty() ? "no ports"
                                    : "ports (" + std::to_string(members.size()) +
                                          "): " + joinStrings(members, ", "));
    if (!unusable.empty()) {
      parts.push_back("unusable: " + joinStrings(unusable, "; "));
    }
    if (!left_text.empty()) {
      parts.push_back("left out by " + joinStrings(left_text, "; "));
    }
    check.detail = joinStrings(parts, "; ");
    if (members.empty()) {
      if (!only_absent_kinds) {
        check.verdict = Verdict::kWarn;
        check.hint = "the pool offers nothing: fix its selector (the rules above left each port "
                     "out) or the order of the pools";
      }
    } else if (unusable.size() >= members.size()) {
      check.verdict = Verdict::kFail;
      check.hint = "no port of the pool is usable: bring the ports up and check that the "
                   "uverbs nodes exist (mlx5_ib loaded, --dev-root)";
    } else if (!unusable.empty()) {
      check.verdict = Verdict::kWarn;
      check.hint = "the unusable ports make their device IDs Unhealthy; bring them up or leave "
                   "them out of the pool";
    }
    checks.push_back(std::move(check));
  }
  return checks;
}

Check checkVersions(const NodeTopology& topology, const NodeSnapshot& snapshot) {
  Check check{"versions", Verdict::kOk, "", "", {}};
  check.evidence = evidenceOf({&snapshot.osrelease, &snapshot.mlx5_core_version,
                               &snapshot.libibverbs, &snapshot.ofed_info});
  const auto text = [](const FileRead& f, const std::string& absent = "unknown") {
    return f.text ? trimmed(*f.text) : absent;
  };
  std::vector<std::string> parts;
  parts.push_back("kernel " + text(snapshot.osrelease));
  parts.push_back("mlx5_core " + text(snapshot.mlx5_core_version,
                                      "unknown (no version file: the inbox driver has none)"));
  std::map<std::string, std::vector<std::string>> by_fw;
  for (const auto& d : topology.devices) {
    by_fw[d.fw_ver.empty() ? "none" : d.fw_ver].push_back(d.name);
  }
  std::vector<std::string> fw;
  fw.reserve(by_fw.size());
  for (const auto& [version, devices] : by_fw) {
    fw.push_back(version + " (" + joinStrings(devices, ", ") + ")");
  }
  if (!fw.empty()) {
    parts.push_back("firmware " + joinStrings(fw, ", "));
  }
  const auto rdma_core = rdmaCoreVersionOf(snapshot.libibverbs.text.value_or(""));
  parts.push_back("libibverbs " + (rdma_core ? "of rdma-core " + std::to_string(*rdma_core) + " (" +
                                                   text(snapshot.libibverbs) + ")"
                                             : text(snapshot.libibverbs)));
  parts.push_back("ofed_info -s " + text(snapshot.ofed_info, "not available"));
  check.detail = joinStrings(parts, "; ");
  return check;
}

std::vector<Check> checkWorkload(const NodeSnapshot& snapshot) {
  const WorkloadFiles& w = snapshot.workload;
  if (!w.in_pod) {
    return {};
  }
  Check cdi{"cdi", Verdict::kOk, "", "", {{"KUBE_RDMA_CDI", w.kube_rdma_cdi.value_or("(unset)")}}};
  const bool rdma_nodes =
      std::any_of(snapshot.uverbs_nodes.begin(), snapshot.uverbs_nodes.end(),
                  [](const std::string& n) { return n.rfind("uverbs", 0) == 0; });
  if (w.kube_rdma_cdi == "1") {
    cdi.detail = "KUBE_RDMA_CDI=1: the runtime applied kube-rdma's CDI spec";
  } else if (!rdma_nodes) {
    cdi.detail = "no RDMA device nodes in this container";
  } else {
    cdi.verdict = Verdict::kWarn;
    cdi.detail = "RDMA device nodes are present but KUBE_RDMA_CDI is not set: the runtime did "
                 "not apply kube-rdma's CDI spec, so its memlock hook did not run";
    cdi.hint = "containerd 1.7 ignores CDI unless enable_cdi = true in its CRI config; turn it "
               "on, or ignore this when the plugin does not run in CDI mode";
  }

  Check memlock{"workload-memlock", Verdict::kOk, "", "", {}};
  memlock.evidence = {evidenceOf(w.limits), evidenceOf(w.status)};
  const SoftLimit limit = memlockRow(w.limits.text.value_or(""));
  if (!limit.found) {
    memlock.verdict = Verdict::kUnknown;
    memlock.detail = "no \"Max locked memory\" row in " + w.limits.path;
    memlock.evidence.front().value = limit.row.empty() ? "(no row)" : limit.row;
    return {cdi, memlock};
  }
  memlock.evidence.front().value = limit.row;
  const auto uid = statusRow(w.status.text.value_or(""), "Uid");
  const auto cap_eff = statusRow(w.status.text.value_or(""), "CapEff");
  const bool root = uid.size() >= 2 && uid[1] == "0";
  constexpr int kCapIpcLock = 14;
  const bool ipc_lock =
      !cap_eff.empty() && ((std::strtoull(cap_eff[0].c_str(), nullptr, 16) >> kCapIpcLock) & 1);
  memlock.evidence.back().value =
      "Uid " + joinStrings(uid, " ") + ", CapEff " + (cap_eff.empty() ? "?" : cap_eff[0]);
  const std::string soft = limit.bytes
                               ? "the workload's memlock soft limit is " + bytesText(*limit.bytes)
                               : "the workload's memlock soft limit is unlimited";
  if (root && ipc_lock) {
    memlock.detail = soft + "; it runs as root with CAP_IPC_LOCK, which lifts it";
  } else if (!limit.bytes) {
    memlock.detail = soft;
  } else {
    memlock.verdict = *limit.bytes < kMemlockFailBytes ? Verdict::kFail : Verdict::kWarn;
    memlock.detail =
        soft + (ipc_lock ? "; CAP_IPC_LOCK does not help a non-root process" : "; no CAP_IPC_LOCK");
    memlock.hint = "RDMA memory registration is capped by this limit: let kube-rdma's CDI "
                   "memlock hook raise it (CDI on in the runtime) or run the workload as root "
                   "with IPC_LOCK";
  }
  return {cdi, memlock};
}

std::vector<Check> runNodeChecks(const NodeTopology& topology, const PluginConfig& config,
                                 const NodeSnapshot& snapshot) {
  std::vector<Check> checks{
      checkPcieLinks(topology, snapshot),       checkPcieAcs(topology, snapshot),
      checkGpuDirect(topology, snapshot),       checkIommu(topology, snapshot),
      checkRoceMtu(topology, config, snapshot), checkRoceEcn(topology, config, snapshot),
      checkFirmware(topology, snapshot),        checkPoolRates(topology, config, snapshot)};
  const auto pools = checkPools(topology, config, snapshot);
  checks.insert(checks.end(), pools.begin(), pools.end());
  checks.push_back(checkVersions(topology, snapshot));
  const auto workload = checkWorkload(snapshot);
  checks.insert(checks.end(), workload.begin(), workload.end());
  return checks;
}

ScrapedFamily nodeCheckFamily(const std::vector<Check>& checks) {
  ScrapedFamily family{"kube_rdma_node_check",
                       "Node checks of rdmactl doctor (docs/rdmactl.md) as a StateSet: 1 for the "
                       "check's verdict (ok, warn, fail, unknown), 0 for the others.",
                       MetricType::kGauge,
                       {}};
  for (const Check& check : checks) {
    for (Verdict state : {Verdict::kOk, Verdict::kWarn, Verdict::kFail, Verdict::kUnknown}) {
      family.samples.push_back({{{"check", check.name}, {"state", toString(state)}},
                                check.verdict == state ? 1.0 : 0.0});
    }
  }
  return family;
}

} // namespace kube_rdma
