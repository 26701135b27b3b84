#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/node/device_model.h"
#include "common/util/metrics.h"
#include "common/pools/plugin_config.h"

// The node checks behind `rdmactl doctor` ("why is NCCL slow on this node"): pure functions over
// a NodeSnapshot of the files they judge (node_snapshot.h reads it from the sysfs and proc roots),
// so the plugin can compute the same verdicts and every verdict is testable on fixtures.
// docs/rdmactl.md lists the checks, the files each reads and the JSON schema.
namespace kube_rdma {

enum class Verdict { kOk, kWarn, kFail, kUnknown };
std::string toString(Verdict verdict); // "ok", "warn", "fail", "unknown"

// One file read and the value it gave ("" for a directory whose presence is the fact).
struct Evidence {
  std::string path;
  std::string value;
};

struct Check {
  Check() = default;
  Check(std::string name_, Verdict verdict_, std::string detail_, std::string hint_,
        std::vector<Evidence> evidence_ = {})
      : name(std::move(name_)), verdict(verdict_), detail(std::move(detail_)),
        hint(std::move(hint_)), evidence(std::move(evidence_)) {}

  std::string name; // "pcie-link"
  Verdict verdict = Verdict::kOk;
  std::string detail; // what was found
  std::string hint;   // what to do about it; empty when ok
  std::vector<Evidence> evidence;
};

// A file as read: nullopt text when it is absent or unreadable.
struct FileRead {
  std::string path;
  std::optional<std::string> text;
};

// The files of one PCI function (an HCA, a GPU or a bridge between them).
struct PciFunctionFiles {
  FileRead current_link_width; // "16"
  FileRead max_link_width;
  FileRead current_link_speed; // "16.0 GT/s PCIe" ("8 GT/s" before Linux 4.19, "Unknown")
  FileRead max_link_speed;
  FileRead config;           // raw config space: 64 bytes without CAP_SYS_ADMIN, 4096 with
  FileRead iommu_group_type; // iommu_group/type: "DMA", "DMA-FQ", "identity", ...
};

// A RoCE data netdev.
struct NetdevFiles {
  FileRead mtu;
  // ecn/roce_np/enable/<prio> and ecn/roce_rp/enable/<prio> ("0" or "1"), by priority; empty
  // when the driver has no ecn directory (inbox mlx5 has none, MLNX_OFED/DOCA do).
  std::map<int, FileRead> ecn_np;
  std::map<int, FileRead> ecn_rp;
};

// The container's own process 1 as `rdmactl doctor` sees it from inside a pod.
struct WorkloadFiles {
  bool in_pod = false;                      // KUBERNETES_SERVICE_HOST is set
  std::optional<std::string> kube_rdma_cdi; // KUBE_RDMA_CDI (our CDI specs set "1")
  FileRead limits;                          // <proc>/1/limits
  FileRead status;                          // <proc>/1/status
};

struct NodeSnapshot {
  std::string sysfs_root; // where the files below were read; evidence paths start with it
  std::map<std::string, PciFunctionFiles> pci; // every HCA, GPU and bridge on their paths
  std::map<std::string, NetdevFiles> netdevs;  // the RoCE ports' netdevs
  std::string dev_root;
  std::set<std::string> uverbs_nodes; // names under <dev_root>/infiniband
  FileRead osrelease;                 // <proc>/sys/kernel/osrelease
  FileRead proc_modules;              // <proc>/modules
  // <sys>/module/<name> of each of kPeerMemoryModules, by name (a directory: "" when there).
  std::map<std::string, FileRead> peermem_modules;
  FileRead nvidia_proc_version;   // <proc>/driver/nvidia/version
  FileRead nvidia_module_version; // <sys>/module/nvidia/version
  FileRead nvidia_taint;          // <sys>/module/nvidia/taint ("PO": proprietary)
  FileRead mlx5_core_version;     // <sys>/module/mlx5_core/version
  FileRead ib_core_netns_mode;    // <sys>/module/ib_core/parameters/netns_mode: "Y" shared, "N"
  FileRead libibverbs;            // the libibverbs file this process loaded (its realpath)
  FileRead ofed_info;             // `ofed_info -s` output when it was run
  WorkloadFiles workload;
};

// rdma-core's version from the file name of its libibverbs ("libibverbs.so.1.14.44.0" -> 44:
// the library's minor version is ABI.rdma-core.0); nullopt for another name.
std::optional<int> rdmaCoreVersionOf(const std::string& libibverbs_file);

// "6.1.0-13-amd64" -> {6, 1}.
std::optional<std::pair<int, int>> kernelVersionOf(const std::string& osrelease);

// "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s PCIe" -> GT/s; nullopt for "Unknown" or other text.
std::optional<double> parseLinkSpeed(const std::string& text);

// The ACS control register of the first ACS extended capability (ID 0x000D) of a config space,
// walked from offset 0x100. kTruncated when the space ends before 0x100 (the kernel's 64 bytes
// for readers without CAP_SYS_ADMIN), kAbsent when the function has no ACS capability.
struct AcsControl {
  enum class Found { kControl, kAbsent, kTruncated } found = Found::kAbsent;
  uint16_t control = 0;
};
AcsControl findAcsControl(const std::string& config_space);
// ACS control bits (PCIe base spec, ACS Control Register).
constexpr uint16_t kAcsSourceValidation = 1u << 0;
constexpr uint16_t kAcsTranslationBlocking = 1u << 1;
constexpr uint16_t kAcsP2pRequestRedirect = 1u << 2;
constexpr uint16_t kAcsP2pCompletionRedirect = 1u << 3;
constexpr uint16_t kAcsUpstreamForwarding = 1u << 4;
constexpr uint16_t kAcsP2pEgressControl = 1u << 5;
constexpr uint16_t kAcsDirectTranslatedP2p = 1u << 6;
// "SV,RR,UF" for the bits set.
std::string acsBitsText(uint16_t control);

// The RoCE MTU suggestion: a 4096-byte RoCE MTU needs room for its headers in the netdev MTU.
constexpr uint64_t kSuggestedRoceMtu = 4200;
// rdma-core and Linux versions that make dma-buf GPUDirect RDMA possible (ibv_reg_dmabuf_mr,
// the kernel's RDMA dma-buf importer).
constexpr int kDmabufRdmaCore = 34;
constexpr std::pair<int, int> kDmabufKernel = {5, 12};
// GPUDirect RDMA's peer memory clients, which let an HCA DMA into GPU memory: nvidia_peermem
// (part of NVIDIA's driver since R470) and nv_peer_mem, its MLNX_OFED-era predecessor. Either
// one will do; the checks name the first of these that is loaded.
inline constexpr const char* kPeerMemoryModules[] = {"nvidia_peermem", "nv_peer_mem"};
// Below this a finite memlock soft limit cannot pin NCCL's buffers (the workload's; rdmactl's own).
constexpr uint64_t kMemlockFailBytes = 1ull << 30;

// Each check on its own (tests call them one by one); runNodeChecks runs them all.
Check checkPcieLinks(const NodeTopology& topology, const NodeSnapshot& snapshot);
Check checkPcieAcs(const NodeTopology& topology, const NodeSnapshot& snapshot);
Check checkGpuDirect(const NodeTopology& topology, const NodeSnapshot& snapshot);
Check checkIommu(const NodeTopology& topology, const NodeSnapshot& snapshot);
// The RoCE checks judge the netdevs of the RoCE ports the configured pools take.
Check checkRoceMtu(const NodeTopology& topology, const PluginConfig& config,
                   const NodeSnapshot& snapshot);
Check checkRoceEcn(const NodeTopology& topology, const PluginConfig& config,
                   const NodeSnapshot& snapshot);
// The kernel's RDMA netns mode: shared (every namespace opens every device) or exclusive (a
// namespace opens only the devices moved into it, as the RDMA CNI does with SR-IOV VFs).
Check checkRdmaNetnsMode(const NodeTopology& topology, const NodeSnapshot& snapshot);
Check checkFirmware(const NodeTopology& topology, const NodeSnapshot& snapshot);
Check checkPoolRates(const NodeTopology& topology, const PluginConfig& config,
                     const NodeSnapshot& snapshot);
// One check per configured pool, named "pool:<resource name>".
std::vector<Check> checkPools(const NodeTopology& topology, const PluginConfig& config,
                              const NodeSnapshot& snapshot);
Check checkVersions(const NodeTopology& topology, const NodeSnapshot& snapshot);
// In a pod only (empty otherwise): "cdi" and "workload-memlock".
std::vector<Check> checkWorkload(const NodeSnapshot& snapshot);

// In this order: pcie-link, pcie-acs, gpudirect-rdma, iommu, roce-mtu, roce-ecn,
// rdma-netns-mode, hca-firmware, pool-rates, pool:<name> per pool, versions, then cdi and
// workload-memlock in a pod.
std::vector<Check> runNodeChecks(const NodeTopology& topology, const PluginConfig& config,
                                 const NodeSnapshot& snapshot);

// The checks as the Prometheus StateSet `kube_rdma_node_check{check, state}`: per check one sample
// for each verdict, 1 for the check's verdict and 0 for the others, so an alert can match
// state="fail" == 1 and a dashboard can count checks per verdict.
ScrapedFamily nodeCheckFamily(const std::vector<Check>& checks);

} // namespace kube_rdma
