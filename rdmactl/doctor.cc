#include "rdmactl/doctor.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/checks/node_check_support.h"
#include "common/util/strings.h"

namespace kube_rdma {
namespace {

// Evidence lines a check prints in text; --json has them all.
constexpr size_t kTextEvidenceLines = 8;

const std::string* envValue(const NcclEnv& env, const std::string& name) {
  const auto it =
      std::find_if(env.begin(), env.end(), [&](const auto& entry) { return entry.first == name; });
  return it == env.end() ? nullptr : &it->second;
}

bool isRoce(const Port& p) {
  return p.link_layer == LinkLayer::kEthernet;
}

Check portsActive(const NodeTopology& topo) {
  std::vector<std::string> bad;
  size_t total = 0;
  for (const auto& d : topo.devices) {
    for (const auto& p : d.ports) {
      ++total;
      if (!p.active()) {
        bad.push_back(d.name + " port " + std::to_string(p.number) + " is " + toString(p.state) +
                      "/" + p.phys_state_name);
      }
    }
  }
  if (bad.empty()) {
    return {"ports-active", Verdict::kOk,
            std::to_string(total) + " of " + std::to_string(total) + " ports ACTIVE", ""};
  }
  return {"ports-active", Verdict::kFail, joinStrings(bad, ", "),
          "check the cable and the switch port (ibstat, ip link); NCCL skips ports that are not "
          "ACTIVE and the device plugin reports them Unhealthy"};
}

Check roceGids(const NodeTopology& topo) {
  std::vector<std::string> missing;
  size_t roce = 0;
  for (const auto& d : topo.devices) {
    for (const auto& p : d.ports) {
      if (!isRoce(p)) {
        continue;
      }
      ++roce;
      const bool v2_ipv4 = std::any_of(p.gids.begin(), p.gids.end(), [](const GidEntry& g) {
        return g.type == GidType::kRoceV2 && !g.ipv4.empty();
      });
      if (!v2_ipv4) {
        missing.push_back(d.name + " port " + std::to_string(p.number) +
                          (p.netdev.empty() ? "" : " (" + p.netdev + ")"));
      }
    }
  }
  if (roce == 0) {
    return {"roce-gids", Verdict::kOk, "no RoCE ports", ""};
  }
  if (missing.empty()) {
    return {"roce-gids", Verdict::kOk,
            "every RoCE port (" + std::to_string(roce) + ") has a RoCE v2 IPv4 GID", ""};
  }
  return {"roce-gids", Verdict::kFail, "no RoCE v2 IPv4 GID on " + joinStrings(missing, ", "),
          "give the port's netdev an IPv4 address (the kernel then adds v1/v2 GIDs); NCCL 2.21+ "
          "picks the lowest-index RoCE v2 IPv4 GID and otherwise falls back to the link-local v1 "
          "GID at index 0, which does not route"};
}

Check uverbsNodes(const DoctorInput& in) {
  std::vector<std::string> missing;
  for (const auto& d : in.topology->devices) {
    if (d.uverbs.empty()) {
      missing.push_back(d.name + " (no uverbs device in sysfs)");
    } else if (in.uverbs_nodes.count(d.uverbs) == 0) {
      missing.push_back(d.name + " (" + in.dev_root + "/infiniband/" + d.uverbs + ")");
    }
  }
  if (missing.empty()) {
    return {"uverbs-nodes", Verdict::kOk,
            "every device's uverbs node is present under " + in.dev_root + "/infiniband", ""};
  }
  return {"uverbs-nodes", Verdict::kFail, "missing: " + joinStrings(missing, ", "),
          "libibverbs (and so NCCL) hides a device whose /dev/infiniband/uverbsN is absent; in a "
          "pod, request rdma/hca or rdma/shared so the device plugin mounts the nodes"};
}

Check memlock(const ProcessFacts& p) {
  if (!p.memlock_bytes) {
    return {"memlock", Verdict::kOk, "RLIMIT_MEMLOCK is unlimited", ""};
  }
  const std::string limit = "RLIMIT_MEMLOCK is " + bytesText(*p.memlock_bytes);
  if (p.cap_ipc_lock) {
    return {"memlock", Verdict::kOk, limit + ", but CAP_IPC_LOCK lifts it", ""};
  }
  const std::string hint =
      "add securityContext.capabilities.add: [IPC_LOCK] (the webhook does for RDMA pods) or run "
      "with ulimit -l unlimited; without it memory registration fails with ENOMEM";
  return {"memlock", *p.memlock_bytes < kMemlockFailBytes ? Verdict::kFail : Verdict::kWarn,
          limit + " and CAP_IPC_LOCK is missing", hint};
}

Check devShm(const ProcessFacts& p) {
  const std::string hint = "mount an emptyDir with medium: Memory at /dev/shm (the webhook adds "
                           "one); NCCL's shared-memory transport needs room per GPU pair";
  if (!p.shm_bytes) {
    return {"dev-shm", Verdict::kFail, "/dev/shm is not mounted", hint};
  }
  const std::string size = "/dev/shm is " + bytesText(*p.shm_bytes);
  if (*p.shm_bytes >= kShmWarnBytes) {
    return {"dev-shm", Verdict::kOk, size, ""};
  }
  return {"dev-shm", *p.shm_bytes < kShmFailBytes ? Verdict::kFail : Verdict::kWarn, size, hint};
}

Check ibHca(const NodeTopology& topo, const std::string& value) {
  const auto list = parseNcclIbHca(value);
  const auto sel = selectHcaPorts(topo, list);
  std::vector<std::string> problems;
  Verdict verdict = Verdict::kOk;
  for (const auto& u : sel.unmatched) {
    problems.push_back("\"" + u + "\" matches no device");
    verdict = Verdict::kFail;
  }
  for (const auto& [entry, devices] : sel.over_matches) {
    problems.push_back("prefix \"" + entry + "\" also matches " + joinStrings(devices, ", "));
    verdict = std::max(verdict, Verdict::kWarn);
  }
  for (const auto& note : list.notes) {
    problems.push_back(note);
    verdict = std::max(verdict, Verdict::kWarn);
  }
  if (!list.dropped.empty()) {
    problems.push_back("entries past NCCL's 32-entry limit are ignored: " +
                       joinStrings(list.dropped, ", "));
    verdict = std::max(verdict, Verdict::kWarn);
  }
  if (sel.selected.empty()) {
    problems.push_back("selects no ACTIVE port");
    verdict = Verdict::kFail;
  }
  std::vector<std::string> selected;
  for (const auto& hp : sel.selected) {
    selected.push_back(hp.device + ":" + std::to_string(hp.port));
  }
  const std::string detail = "NCCL_IB_HCA=" + value + " selects " +
                             (selected.empty() ? "nothing" : joinStrings(selected, ", ")) +
                             (problems.empty() ? "" : "; " + joinStrings(problems, ", "));
  return {"nccl-ib-hca", verdict, detail,
          verdict == Verdict::kOk ? ""
                                  : "use exact names with ports, e.g. \"=mlx5_1:1,mlx5_2:1\" "
                                    "(rdmactl nccl-env prints the node's value)"};
}

Check gidIndex(const NodeTopology& topo, const NcclEnv& env, const std::string& value) {
  char* end = nullptr;
  const long long index = std::strtoll(value.c_str(), &end, 0); // NCCL's strtoll(.., 0)
  if (end == value.c_str() || *end != '\0' || index < 0) {
    return {"nccl-ib-gid-index", Verdict::kFail,
            "NCCL_IB_GID_INDEX=" + value + " is not a non-negative number",
            "leave NCCL_IB_GID_INDEX unset: NCCL 2.21+ picks the RoCE v2 IPv4 GID itself"};
  }
  const std::string* hca = envValue(env, "NCCL_IB_HCA");
  const auto list = parseNcclIbHca(hca ? *hca : "");
  std::vector<std::string> bad;
  size_t checked = 0;
  for (const auto& d : topo.devices) {
    for (const auto& p : d.ports) {
      if (!isRoce(p) || !p.active() || !matches(list, d.name, static_cast<int>(p.number))) {
        continue;
      }
      ++checked;
      const std::string where = d.name + " port " + std::to_string(p.number) + " index " + value;
      const auto entry = std::find_if(p.gids.begin(), p.gids.end(), [&](const GidEntry& g) {
        return g.index == static_cast<uint64_t>(index);
      });
      if (entry == p.gids.end()) {
        bad.push_back(where + " is empty");
      } else if (entry->gid.rfind("fe80:0000:0000:0000:", 0) == 0) {
        bad.push_back(where + " is link-local");
      } else if (entry->type != GidType::kRoceV2) {
        bad.push_back(where + " is RoCE " +
                      (entry->type == GidType::kRoceV1 ? "v1" : "of unknown type"));
      }
    }
  }
  if (bad.empty()) {
    return {"nccl-ib-gid-index", Verdict::kOk,
            "NCCL_IB_GID_INDEX=" + value + " is a routable RoCE v2 GID on every selected RoCE " +
                "port (" + std::to_string(checked) + ")",
            ""};
  }
  return {"nccl-ib-gid-index", Verdict::kFail, joinStrings(bad, ", "),
          "unset NCCL_IB_GID_INDEX (NCCL 2.21+ picks per port) or set the index `rdmactl gids` "
          "shows as v2 with an IPv4 address on every port"};
}

// The GID NCCL uses on each RoCE port NCCL_IB_HCA selects, as the environment and then nccl.conf
// give them (NCCL's order), and whether it is this network namespace's own: the kernel lists
// every pod's macvlan and ipvlan addresses on the parent's port (docs/pod-networks.md).
std::optional<Check> gidNamespace(const NodeTopology& topo, const DoctorInput& in) {
  const auto effective = [&](const std::string& name) {
    const std::string* value = envValue(in.nccl_env, name);
    return value != nullptr ? value : envValue(in.nccl_conf, name);
  };
  const std::string* hca = effective("NCCL_IB_HCA");
  if (hca == nullptr) {
    return std::nullopt;
  }
  const std::string* set = effective("NCCL_IB_GID_INDEX");
  const auto list = parseNcclIbHca(*hca);
  std::vector<std::string> own, foreign, foreign_with_own;
  std::optional<uint32_t> own_index;
  for (const auto& d : topo.devices) {
    for (const auto& p : d.ports) {
      if (!isRoce(p) || !p.active() || !matches(list, d.name, static_cast<int>(p.number))) {
        continue;
      }
      const std::string port = d.name + ":" + std::to_string(p.number);
      // NCCL 2.21+ picks by itself when no index is set (before 2.21: index 0).
      const std::optional<uint32_t> used =
          set != nullptr && !set->empty() ? parseWhole<uint32_t>(*set) : selectGidIndex(p, {});
      const auto entry = std::find_if(p.gids.begin(), p.gids.end(),
                                      [&](const GidEntry& g) { return used && g.index == *used; });
      const auto mine = selectOwnGidIndex(p, {}, topo.addresses);
      if (entry != p.gids.end() && gidInNamespace(*entry, topo.addresses)) {
        own.push_back(port + " index " + std::to_string(*used));
      } else if (mine) {
        foreign_with_own.push_back(port + " uses " +
                                   (used ? "index " + std::to_string(*used) : "no index") +
                                   ", this namespace's own is " + std::to_string(*mine));
        own_index = mine;
      } else {
        foreign.push_back(port);
      }
    }
  }
  if (own.empty() && foreign.empty() && foreign_with_own.empty()) {
    return std::nullopt;
  }
  const std::string source =
      set == nullptr ? "NCCL's own choice (NCCL_IB_GID_INDEX unset)" : "NCCL_IB_GID_INDEX=" + *set;
  if (!foreign_with_own.empty()) {
    return Check{"nccl-gid-namespace", Verdict::kFail,
                 source + ": another namespace's GID (the host's or another pod's) on " +
                     joinStrings(foreign_with_own, "; "),
                 "use this namespace's own GID: NCCL_IB_GID_INDEX=" + std::to_string(*own_index) +
                     ", or let kube-rdma-nccl-hook write it (the plugin's CDI mode, or DRA)"};
  }
  if (!foreign.empty()) {
    return Check{"nccl-gid-namespace", Verdict::kOk,
                 source + ": this namespace has no GID of its own on " +
                     joinStrings(foreign, ", ") +
                     " (a pod on the cluster network only): RoCE uses the host's addresses there",
                 ""};
  }
  return Check{"nccl-gid-namespace", Verdict::kOk,
               source + ": this namespace's own GID on " + joinStrings(own, ", "), ""};
}

Check socketIfname(const std::vector<std::string>& interfaces, const std::string& value) {
  const auto list = parseNcclSocketIfname(value);
  if (list.ignored) {
    return {"nccl-socket-ifname", Verdict::kWarn,
            "NCCL_SOCKET_IFNAME=\"" + value + "\" is too short and NCCL ignores it",
            "name an interface, e.g. \"=eth0\""};
  }
  const auto selected = selectInterfaces(list, interfaces);
  if (selected.empty()) {
    return {"nccl-socket-ifname", Verdict::kFail,
            "NCCL_SOCKET_IFNAME=" + value +
                " matches no interface (interfaces: " + joinStrings(interfaces, ", ") + ")",
            "NCCL finds no bootstrap interface and fails; use the pod's interface, e.g. \"=eth0\""};
  }
  return {"nccl-socket-ifname", Verdict::kOk,
          "NCCL_SOCKET_IFNAME=" + value + " selects " + joinStrings(selected, ", "), ""};
}

} // namespace

std::vector<Check> runDoctor(const DoctorInput& in) {
  const NodeTopology& topo = *in.topology;
  std::vector<Check> checks;
  if (topo.devices.empty()) {
    checks.push_back({"rdma-devices", Verdict::kFail, "no RDMA devices found (" + topo.source + ")",
                      "load the driver (mlx5_ib) and check --sysfs-root; in a pod, request an RDMA "
                      "resource"});
  } else {
    checks.push_back({"rdma-devices", Verdict::kOk,
                      std::to_string(topo.devices.size()) + " RDMA devices (" + topo.source + ")",
                      ""});
    checks.push_back(portsActive(topo));
    checks.push_back(roceGids(topo));
    checks.push_back(uverbsNodes(in));
  }
  if (in.config != nullptr && in.snapshot != nullptr) {
    const auto node_checks = runNodeChecks(topo, *in.config, *in.snapshot);
    checks.insert(checks.end(), node_checks.begin(), node_checks.end());
  }
  checks.push_back(memlock(in.process));
  checks.push_back(devShm(in.process));

  std::vector<std::string> names;
  for (const auto& [name, value] : in.nccl_env) {
    names.push_back(name + "=" + value);
  }
  checks.push_back({"nccl-env", Verdict::kOk,
                    names.empty() ? "no NCCL_* variables set" : "set: " + joinStrings(names, ", "),
                    ""});
  if (const auto* v = envValue(in.nccl_env, "NCCL_IB_DISABLE"); v && *v == "1") {
    checks.push_back({"nccl-ib-disable", Verdict::kFail,
                      "NCCL_IB_DISABLE=1: NCCL does not use InfiniBand/RoCE and falls back to "
                      "TCP sockets",
                      "unset NCCL_IB_DISABLE or set it to 0"});
  }
  if (const auto* v = envValue(in.nccl_env, "NCCL_IB_HCA")) {
    checks.push_back(ibHca(topo, *v));
  }
  if (const auto* v = envValue(in.nccl_env, "NCCL_IB_GID_INDEX")) {
    checks.push_back(gidIndex(topo, in.nccl_env, *v));
  }
  if (const auto* v = envValue(in.nccl_env, "NCCL_SOCKET_IFNAME")) {
    checks.push_back(socketIfname(in.interfaces, *v));
  }
  if (auto check = gidNamespace(topo, in)) {
    checks.push_back(std::move(*check));
  }
  return checks;
}

bool anyFailed(const std::vector<Check>& checks) {
  return std::any_of(checks.begin(), checks.end(),
                     [](const Check& c) { return c.verdict == Verdict::kFail; });
}

std::string renderChecksText(const std::vector<Check>& checks) {
  std::ostringstream out;
  std::map<Verdict, size_t> counts;
  for (const auto& c : checks) {
    ++counts[c.verdict];
    // FAIL in capitals so it stands out in a terminal.
    std::string verdict = c.verdict == Verdict::kFail ? "FAIL" : toString(c.verdict);
    verdict.resize(std::max<size_t>(verdict.size() + 1, 5), ' ');
    std::string name = c.name;
    name.resize(std::max<size_t>(name.size() + 1, 20), ' ');
    out << verdict << name << c.detail << "\n";
    if (!c.hint.empty()) {
      out << std::string(25, ' ') << "hint: " << c.hint << "\n";
    }
    if (c.verdict != Verdict::kOk) {
      const size_t shown = std::min(c.evidence.size(), kTextEvidenceLines);
      for (size_t i = 0; i < shown; ++i) {
        out << std::string(25, ' ') << "read: " << c.evidence[i].path << " = "
            << c.evidence[i].value << "\n";
      }
      if (c.evidence.size() > shown) {
        out << std::string(25, ' ') << "read: " << c.evidence.size() - shown
            << " more files (--json lists them)\n";
      }
    }
  }
  out << "summary: " << counts[Verdict::kOk] << " ok, " << counts[Verdict::kWarn] << " warn, "
      << counts[Verdict::kFail] << " failed, " << counts[Verdict::kUnknown] << " unknown\n";
  return out.str();
}

std::string renderChecksJson(const std::vector<Check>& checks) {
  nlohmann::json list = nlohmann::json::array();
  std::map<std::string, size_t> summary{{"ok", 0}, {"warn", 0}, {"fail", 0}, {"unknown", 0}};
  for (const auto& c : checks) {
    nlohmann::json evidence = nlohmann::json::array();
    for (const auto& e : c.evidence) {
      evidence.push_back({{"path", e.path}, {"value", e.value}});
    }
    ++summary[toString(c.verdict)];
    list.push_back({{"name", c.name},
                    {"verdict", toString(c.verdict)},
                    {"detail", c.detail},
                    {"hint", c.hint},
                    {"evidence", evidence}});
  }
  const nlohmann::json out{{"ok", !anyFailed(checks)}, {"summary", summary}, {"checks", list}};
  return out.dump(2) + "\n";
}

} // namespace kube_rdma
