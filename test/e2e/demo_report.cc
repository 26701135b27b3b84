#include "test/e2e/demo_report.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>

namespace kube_rdma {
namespace {

const std::string* find(const NcclEnv& env, const std::string& name) {
  // The last entry of a name is the one a runtime keeps.
  const std::string* found = nullptr;
  for (const auto& [n, v] : env) {
    if (n == name) {
      found = &v;
    }
  }
  return found;
}

} // namespace

std::vector<EnvOrigin> finalEnvironment(const NcclEnv& user, const NcclEnv& patched,
                                        const NcclEnv& node, const NcclEnv& nccl_conf,
                                        const std::string& prefix) {
  std::map<std::string, EnvOrigin> result;
  auto layer = [&](const NcclEnv& env, const std::string& source) {
    for (const auto& [name, value] : env) {
      if (name.rfind(prefix, 0) != 0) {
        continue;
      }
      EnvOrigin& entry = result[name];
      if (!entry.source.empty() && entry.value != value) {
        entry.shadowed.emplace_back(entry.source, entry.value);
      }
      entry = EnvOrigin{name, value, source, std::move(entry.shadowed)};
    }
  };
  // Allocate envs first, the pod spec after (later wins); the webhook's entries are the
  // patched ones the user did not write.
  layer(node, "node");
  NcclEnv policy;
  for (const auto& [name, value] : patched) {
    if (find(user, name) == nullptr) {
      policy.emplace_back(name, value);
    }
  }
  layer(policy, "policy");
  layer(user, "user");
  // nccl.conf: setenv without overwrite, the first line of a name counts.
  for (const auto& [name, value] : nccl_conf) {
    if (name.rfind(prefix, 0) != 0) {
      continue;
    }
    auto it = result.find(name);
    if (it == result.end()) {
      result[name] = EnvOrigin{name, value, "nccl.conf", {}};
    } else if (it->second.source != "nccl.conf" && it->second.value != value) {
      it->second.shadowed.emplace_back("nccl.conf", value);
    }
  }
  std::vector<EnvOrigin> out;
  out.reserve(result.size());
  for (auto& [name, entry] : result) {
    out.push_back(std::move(entry));
  }
  return out;
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> unifiedDiff(const std::vector<std::string>& before,
                                     const std::vector<std::string>& after, size_t context) {
  // Longest common subsequence table, then one walk that tags each line; pods are a few hundred
  // lines, so the quadratic table is small.
  const size_t n = before.size();
  const size_t m = after.size();
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] =
          before[i] == after[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  struct Line {
    char tag;
    std::string text;
    size_t old_line; // 1-based position in `before` of this line or of the next one
    size_t new_line;
  };
  std::vector<Line> lines;
  size_t i = 0;
  size_t j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && before[i] == after[j]) {
      lines.push_back({' ', before[i], i + 1, j + 1});
      ++i;
      ++j;
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      lines.push_back({'-', before[i], i + 1, j + 1});
      ++i;
    } else {
      lines.push_back({'+', after[j], i + 1, j + 1});
      ++j;
    }
  }
  std::vector<std::string> out;
  size_t k = 0;
  while (k < lines.size()) {
    if (lines[k].tag == ' ') {
      ++k;
      continue;
    }
    // A hunk: from `context` lines before this change to `context` lines after the last change
    // that is at most 2*context unchanged lines away.
    const size_t start = k >= context ? k - context : 0;
    size_t end = k;
    size_t unchanged = 0;
    for (size_t p = k; p < lines.size() && unchanged <= 2 * context; ++p) {
      if (lines[p].tag == ' ') {
        ++unchanged;
      } else {
        unchanged = 0;
        end = p;
      }
    }
    const size_t stop = std::min(lines.size(), end + context + 1);
    size_t old_count = 0;
    size_t new_count = 0;
    for (size_t p = start; p < stop; ++p) {
      old_count += lines[p].tag != '+';
      new_count += lines[p].tag != '-';
    }
    out.push_back("@@ -" + std::to_string(lines[start].old_line) + "," + std::to_string(old_count) +
                  " +" + std::to_string(lines[start].new_line) + "," + std::to_string(new_count) +
                  " @@");
    for (size_t p = start; p < stop; ++p) {
      out.push_back(std::string(1, lines[p].tag) + lines[p].text);
    }
    k = stop;
  }
  return out;
}

std::string formatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        const std::string& indent) {
  std::vector<size_t> widths(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  };
  measure(header);
  for (const auto& row : rows) {
    measure(row);
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line = indent;
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) {
        line += std::string(widths[c] - row[c].size() + 2, ' ');
      }
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  };
  emit(header);
  for (const auto& row : rows) {
    emit(row);
  }
  return out;
}

std::vector<SliceDevice> sliceDevices(const nlohmann::json& slice) {
  std::vector<SliceDevice> devices;
  for (const nlohmann::json& d :
       slice.value("/spec/devices"_json_pointer, nlohmann::json::array())) {
    const nlohmann::json attributes = d.value("attributes", nlohmann::json::object());
    const auto text = [&](const std::string& id) {
      const auto it = attributes.find(id);
      return it != attributes.end() ? it->value("string", "") : std::string();
    };
    devices.push_back({d.value("name", ""), text("rdmaDevice"), text("netdev"), text("linkLayer"),
                       text("state"), text("resource.kubernetes.io/pcieRoot")});
  }
  return devices;
}

std::vector<SliceDevice> roceDevicesOnRoot(const std::vector<SliceDevice>& devices,
                                           const std::string& pcie_root) {
  std::vector<SliceDevice> candidates;
  std::copy_if(
      devices.begin(), devices.end(), std::back_inserter(candidates), [&](const SliceDevice& d) {
        return d.link_layer == "Ethernet" && d.state == "ACTIVE" && d.pcie_root == pcie_root;
      });
  return candidates;
}

nlohmann::json allocatedClaim(const nlohmann::json& claim_template, const ClaimAllocation& a) {
  const nlohmann::json& metadata = claim_template["metadata"];
  nlohmann::json results = nlohmann::json::array();
  for (const AllocatedDevice& r : a.results) {
    results.push_back(
        {{"request", r.request}, {"driver", r.driver}, {"pool", a.node}, {"device", r.device}});
  }
  const nlohmann::json node_selector = {
      {"nodeSelectorTerms",
       {{{"matchFields",
          {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {a.node}}}}}}}}};
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata",
           {{"name", a.pod_name + "-" + a.pod_claim_name + "-d3m0x"},
            {"namespace", metadata.value("namespace", "default")},
            {"annotations", {{"resource.kubernetes.io/pod-claim-name", a.pod_claim_name}}},
            {"ownerReferences",
             {{{"apiVersion", "v1"},
               {"kind", "Pod"},
               {"name", a.pod_name},
               {"uid", a.pod_uid},
               {"controller", true},
               {"blockOwnerDeletion", true}}}}}},
          {"spec", claim_template.value("/spec/spec"_json_pointer, nlohmann::json::object())},
          {"status",
           {{"allocation", {{"devices", {{"results", results}}}, {"nodeSelector", node_selector}}},
            {"reservedFor", {{{"resource", "pods"}, {"name", a.pod_name}, {"uid", a.pod_uid}}}}}}};
}

void StepTally::begin() {
  end();
  open_ = true;
  step_failed_ = false;
  step_skipped_ = false;
}

void StepTally::check(bool ok) {
  step_failed_ = step_failed_ || !ok;
}

void StepTally::skip() {
  step_skipped_ = true;
}

void StepTally::end() {
  if (open_ && !step_failed_) {
    ++(step_skipped_ ? skipped_ : passed_);
  }
  open_ = false;
}

std::string StepTally::counts() const {
  return std::to_string(passed_) + "/" + std::to_string(steps_total_) + " steps" +
         (skipped_ > 0 ? ", " + std::to_string(skipped_) + " skipped" : "");
}

} // namespace kube_rdma
