#include "common/checks/node_check_support.h"

#include <set>
#include <sstream>

namespace kube_rdma {

Verdict worse(Verdict a, Verdict b) {
  for (Verdict v : {Verdict::kFail, Verdict::kWarn, Verdict::kUnknown}) {
    if (a == v || b == v) {
      return v;
    }
  }
  return Verdict::kOk;
}

std::optional<uint64_t> parseUnsigned(const std::string& text) {
  return parseWhole<uint64_t>(trimmed(text));
}

Evidence evidenceOf(const FileRead& file) {
  return {file.path, file.text ? trimmed(file.text->substr(0, file.text->find('\n'))) : "(absent)"};
}

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

std::string lineStartingWith(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) {
      return line;
    }
  }
  return "";
}

std::string bytesText(uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) {
    return std::to_string(bytes >> 30) + " GiB";
  }
  if (bytes >= (1ull << 20)) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  return std::to_string(bytes >> 10) + " KiB";
}

} // namespace kube_rdma
