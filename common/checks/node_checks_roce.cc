// The RoCE checks: the data netdevs' MTU and ECN; the kernel's RDMA netns mode.
#include "common/checks/node_checks.h"

#include "common/checks/node_check_support.h"
#include "common/pools/pools.h"
#include "common/util/strings.h"

namespace kube_rdma {
namespace {

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

} // namespace

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
  std::vector<std::string> groups =
      namesByValue(by_mtu, [](uint64_t mtu) { return "MTU " + std::to_string(mtu); });
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

Check checkRdmaNetnsMode(const NodeTopology& topology, const NodeSnapshot& snapshot) {
  const FileRead& mode = snapshot.ib_core_netns_mode;
  Check check{"rdma-netns-mode", Verdict::kOk, "", "", {evidenceOf(mode)}};
  const std::string value = trimmed(mode.text.value_or(""));
  constexpr const char* kShared = "shared: every network namespace opens the node's RDMA devices, "
                                  "so a pod on a macvlan or ipvlan network of a port uses it with "
                                  "GIDs of its own addresses";
  constexpr const char* kHint = "for pods on macvlan or ipvlan networks of the ports, set the "
                                "shared mode (`rdma system set netns shared`, or ib_core "
                                "netns_mode=1); exclusive mode needs a device per pod, an SR-IOV "
                                "VF that the RDMA CNI moves into the pod";
  if (!mode.text) {
    check.verdict = Verdict::kUnknown;
    check.detail = mode.path + " is absent: ib_core is not loaded, or the kernel is older than 5.3";
  } else if (value == "Y") {
    check.detail = kShared;
  } else if (value != "N") {
    check.verdict = Verdict::kUnknown;
    check.detail = "netns_mode is " + quoted(value) + ", neither Y (shared) nor N (exclusive)";
  } else if (!snapshot.workload.in_pod) {
    check.verdict = Verdict::kWarn;
    check.detail = "exclusive: a pod off the host network opens only the RDMA devices moved into "
                   "its namespace; the ports the pools grant stay in the host's, so such a pod "
                   "cannot open them and NCCL falls back to TCP";
    check.hint = kHint;
  } else if (topology.devices.empty()) {
    check.verdict = Verdict::kFail;
    check.detail = "exclusive, and no RDMA device is in this network namespace: RDMA is impossible "
                   "here, NCCL falls back to TCP";
    check.hint = kHint;
  } else {
    std::vector<std::string> names;
    for (const auto& device : topology.devices) {
      names.push_back(device.name);
    }
    check.detail = "exclusive: this namespace has RDMA devices of its own (" +
                   joinStrings(names, ", ") + "), whose GID tables hold only its addresses";
  }
  return check;
}

} // namespace kube_rdma
