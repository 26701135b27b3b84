// The checks of the workload's own container, and running and reporting all checks; the
// others are in node_checks_<area>.cc.
#include "common/checks/node_checks.h"

#include <algorithm>
#include <iterator>
#include <sstream>

#include "common/checks/node_check_support.h"
#include "common/util/strings.h"

namespace kube_rdma {
namespace {

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
  static constexpr const char* kNames[] = {"ok", "warn", "fail", "unknown"};
  static_assert(std::size(kNames) == static_cast<size_t>(Verdict::kUnknown) + 1);
  return kNames[static_cast<size_t>(verdict)];
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
      checkPcieLinks(topology, snapshot),        checkPcieAcs(topology, snapshot),
      checkGpuDirect(topology, snapshot),        checkIommu(topology, snapshot),
      checkRoceMtu(topology, config, snapshot),  checkRoceEcn(topology, config, snapshot),
      checkRdmaNetnsMode(topology, snapshot),    checkFirmware(topology, snapshot),
      checkPoolRates(topology, config, snapshot)};
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
