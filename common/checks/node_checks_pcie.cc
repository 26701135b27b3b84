// The PCIe checks: link width and speed, ACS redirection between GPUs and HCAs.
#include "common/checks/node_checks.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "common/checks/node_check_support.h"
#include "common/util/strings.h"
#include "common/node/topology.h"

namespace kube_rdma {
namespace {

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

} // namespace

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

} // namespace kube_rdma
