#include "common/pools/nccl_settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <set>

#include "common/util/strings.h"

namespace kube_rdma {
namespace {

// NCCL copies each list entry's name into `char prefix[64]` without a bound check.
constexpr size_t kNcclNameBuffer = 64;

// NCCL reads a port with atoi, which glibc implements as (int)strtol(s, NULL, 10): leading space,
// a sign, digits saturated to long, then narrowed to int (LONG_MAX becomes -1); 0 when no digits.
// `clean` is false when the text was not just digits.
int ncclAtoi(std::string_view s, bool& clean) {
  clean =
      !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  return static_cast<int>(std::strtol(std::string(s).c_str(), nullptr, 10));
}

// parseStringList with the "^" / "=" prefixes handled the way NCCL's callers do.
NcclDeviceList parseList(std::string_view value, size_t limit, bool ports_used) {
  NcclDeviceList out;
  std::string_view rest = value;
  if (!rest.empty() && rest.front() == '^') {
    out.exclude = true;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '=') {
    out.exact = true;
    rest.remove_prefix(1);
    if (!out.exclude && !rest.empty() && rest.front() == '^') {
      out.notes.push_back("\"=^\" is not an exclude list: NCCL reads names starting with \"^\"; "
                          "write \"^=\" to exclude exact names");
    }
  }
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t comma = std::min(rest.find(',', start), rest.size());
    const std::string_view segment = rest.substr(start, comma - start);
    start = comma + 1;
    const size_t colon = segment.find(':');
    const std::string_view name = segment.substr(0, colon);
    if (name.empty()) {
      if (!segment.empty()) {
        out.notes.push_back("entry " + quoted(segment) + " has no name and is skipped");
      }
      continue;
    }
    if (out.entries.size() >= limit) {
      out.dropped.emplace_back(segment);
      continue;
    }
    NcclListEntry entry{std::string(name), -1};
    if (colon != std::string_view::npos) {
      bool clean = false;
      entry.port = ncclAtoi(segment.substr(colon + 1), clean);
      if (!ports_used) {
        out.notes.push_back("the port in " + quoted(segment) + " is ignored for interfaces");
      } else if (!clean || entry.port < 1) {
        const std::string effect = entry.port == -1 ? " (any port)"
                                   : entry.port < 1 ? ", which matches no port"
                                                    : "";
        out.notes.push_back("entry " + quoted(segment) + ": NCCL reads the port as " +
                            std::to_string(entry.port) + effect);
      }
    }
    if (std::any_of(name.begin(), name.end(), [](unsigned char c) { return std::isspace(c); })) {
      out.notes.push_back("entry " + quoted(name) + " contains whitespace, which NCCL keeps");
    }
    if (name.size() >= kNcclNameBuffer) {
      out.notes.push_back("entry " + quoted(name) + " is longer than NCCL's 63-byte name buffer");
    }
    out.entries.push_back(std::move(entry));
  }
  if (!out.dropped.empty()) {
    out.notes.push_back(std::to_string(out.dropped.size()) + " entries past NCCL's limit of " +
                        std::to_string(limit) + " are ignored");
  }
  return out;
}

bool nameMatches(const NcclDeviceList& list, const NcclListEntry& entry, std::string_view name) {
  return list.exact ? name == entry.name : name.substr(0, entry.name.size()) == entry.name;
}

} // namespace

Result<std::string> renderIbHca(const std::vector<HcaPort>& ports) {
  if (ports.empty()) {
    return makeError("NCCL_IB_HCA: no ports to list (an empty \"=\" list selects every device)");
  }
  if (ports.size() > kNcclIbHcaMaxEntries) {
    return makeError("NCCL_IB_HCA: " + std::to_string(ports.size()) + " ports, NCCL reads only " +
                     std::to_string(kNcclIbHcaMaxEntries));
  }
  std::string out = "=";
  for (const auto& p : ports) {
    if (p.device.empty() || p.device.find_first_of(",: \t\n\r") != std::string::npos) {
      return makeError("NCCL_IB_HCA: device name " + quoted(p.device) +
                       " cannot be written in an NCCL_IB_HCA list");
    }
    if (p.port == 0) {
      return makeError("NCCL_IB_HCA: port 0 of " + p.device + " does not exist (ports start at 1)");
    }
    out += (out.size() > 1 ? "," : "") + p.device + ":" + std::to_string(p.port);
  }
  return out;
}

bool isPortableEnvName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

NcclDeviceList parseNcclIbHca(std::string_view value) {
  return parseList(value, kNcclIbHcaMaxEntries, true);
}

NcclDeviceList parseNcclSocketIfname(std::string_view value) {
  if (value.size() <= 1) {
    NcclDeviceList out;
    out.ignored = true;
    out.notes.push_back("a value of one character or less is ignored; NCCL picks interfaces "
                        "itself");
    return out;
  }
  return parseList(value, kNcclSocketIfnameMaxEntries, false);
}

bool matches(const NcclDeviceList& list, std::string_view name, int port) {
  if (list.ignored) {
    return true;
  }
  const bool matched =
      list.entries.empty() ||
      std::any_of(list.entries.begin(), list.entries.end(), [&](const NcclListEntry& e) {
        return nameMatches(list, e, name) && (port == -1 || e.port == -1 || port == e.port);
      });
  return matched != list.exclude;
}

NcclHcaSelection selectHcaPorts(const NodeTopology& topology, const NcclDeviceList& list) {
  NcclHcaSelection out;
  for (const auto& device : topology.devices) {
    for (const auto& port : device.ports) {
      const bool usable_link =
          port.link_layer == LinkLayer::kInfiniBand || port.link_layer == LinkLayer::kEthernet;
      if (port.active() && usable_link &&
          matches(list, device.name, static_cast<int>(port.number))) {
        out.selected.push_back(HcaPort{device.name, port.number});
      }
    }
  }
  for (const auto& e : list.entries) {
    std::vector<std::string> names;
    bool any_port = false;
    for (const auto& device : topology.devices) {
      if (!nameMatches(list, e, device.name)) {
        continue;
      }
      names.push_back(device.name);
      for (const auto& port : device.ports) {
        any_port = any_port || e.port == -1 || static_cast<int>(port.number) == e.port;
      }
    }
    if (!any_port) {
      out.unmatched.push_back(e.port == -1 ? e.name : e.name + ":" + std::to_string(e.port));
    }
    if (!list.exact && names.size() > 1) {
      out.over_matches.emplace_back(e.name, std::move(names));
    }
  }
  return out;
}

std::vector<std::string> selectInterfaces(const NcclDeviceList& list,
                                          const std::vector<std::string>& candidates) {
  std::vector<std::string> out;
  std::copy_if(candidates.begin(), candidates.end(), std::back_inserter(out),
               [&](const std::string& name) { return matches(list, name); });
  return out;
}

Result<std::string> renderNcclConf(const NcclEnv& settings) {
  std::string out;
  std::set<std::string> seen;
  for (const auto& [name, value] : settings) {
    if (!isPortableEnvName(name)) {
      return makeError("nccl.conf: name " + quoted(name) +
                       " must be letters, digits and '_' (not starting with a digit)");
    }
    if (name.size() > kNcclConfMaxLength || value.size() > kNcclConfMaxLength) {
      return makeError("nccl.conf: " + name + " is longer than NCCL's 1023-byte limit");
    }
    if (value.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
      return makeError("nccl.conf: the value of " + name +
                       " contains a newline, carriage return or NUL");
    }
    if (!seen.insert(name).second) {
      return makeError("nccl.conf: " + name + " is given twice (NCCL would keep the first)");
    }
    out += name + "=" + value + "\n";
  }
  return out;
}

NcclEnv parseNcclConf(std::string_view text) {
  NcclEnv out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    line = line.substr(0, line.find('\0')); // C strings end at a NUL
    if (!line.empty() && line.front() == '#') {
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      continue;
    }
    out.emplace_back(std::string(line.substr(0, std::min(eq, kNcclConfMaxLength))),
                     std::string(line.substr(eq + 1, kNcclConfMaxLength)));
  }
  return out;
}

} // namespace kube_rdma
