// The version checks: HCA firmware, the driver stack, the kernel and rdma-core.
#include "common/checks/node_checks.h"

#include <charconv>
#include <sstream>

#include "common/checks/node_check_support.h"
#include "common/util/strings.h"

namespace kube_rdma {
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
    const auto as_is = [](const std::string& fw) { return fw; };
    drift.push_back(type + ": " + joinStrings(namesByValue(versions, as_is), "; "));
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

} // namespace kube_rdma
