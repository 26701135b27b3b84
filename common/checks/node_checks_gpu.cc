// The GPUDirect RDMA checks: a peer memory client or dma-buf, and the IOMMU.
#include "common/checks/node_checks.h"

#include <iterator>
#include <sstream>

#include "common/checks/node_check_support.h"
#include "common/util/strings.h"

namespace kube_rdma {
namespace {

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

} // namespace

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

} // namespace kube_rdma
