// The pool checks: each pool's ports, and their rates.
#include "common/checks/node_checks.h"

#include <algorithm>

#include "common/checks/node_check_support.h"
#include "common/pools/pools.h"
#include "common/util/strings.h"

namespace kube_rdma {
namespace {

std::string portName(const HcaPort& port) {
  return port.device + ":" + std::to_string(port.port);
}

std::string portAttributePath(const NodeSnapshot& snapshot, const HcaPort& port,
                              const std::string& attribute) {
  return snapshot.sysfs_root + "/class/infiniband/" + port.device + "/ports/" +
         std::to_string(port.port) + "/" + attribute;
}

} // namespace

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
      const auto gbps = [](uint32_t rate) { return std::to_string(rate) + " Gb/s"; };
      mixed.push_back(pool.spec.resource_name + ": " +
                      joinStrings(namesByValue(by_rate, gbps), "; "));
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

} // namespace kube_rdma
