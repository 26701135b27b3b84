#pragma once

#include <chrono>
#include <ctime>
#include <map>
#include <optional>
#include <regex>
#include <string>

#include "common/util/result.h"

// Reads an NFD feature file back by NFD's own documented rules (local source, v0.14 and later)
// and Kubernetes' label syntax, independently of how common/labels/nfd_features.cc writes one, for
// the tests: a file of at most 64 KiB; lines trimmed, blank ones skipped; "#" lines are comments
// unless they start with "# +", a directive (expiry-time=<RFC 3339>, no-label, no-feature; any
// other is an error); every other line is "<name>[=<value>]" (no "=": "true") and is dropped when
// the expiry-time in force is before `now`. Stricter than NFD, which only logs: every label must
// be one the API server accepts, prefix/name with a DNS-subdomain prefix outside kubernetes.io.
namespace kube_rdma {

struct ReadFeatureFile {
  std::map<std::string, std::string> labels;
  std::optional<std::chrono::system_clock::time_point> expiry; // the last expiry-time directive
};

inline bool isLabelName(const std::string& name) {
  static const std::regex kName("[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?");
  return std::regex_match(name, kName);
}

inline bool isLabelValue(const std::string& value) {
  return value.empty() || isLabelName(value); // the same syntax, and empty is allowed
}

inline bool isDnsSubdomain(const std::string& prefix) {
  static const std::regex kSubdomain(
      "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return prefix.size() <= 253 && std::regex_match(prefix, kSubdomain);
}

// Go's time.RFC3339 layout: 2006-01-02T15:04:05Z07:00, optional fraction.
inline std::optional<std::chrono::system_clock::time_point> parseRfc3339(const std::string& text) {
  static const std::regex kTime(
      "(\\d{4})-(\\d{2})-(\\d{2})T(\\d{2}):(\\d{2}):(\\d{2})(\\.\\d+)?(Z|([+-])(\\d{2}):(\\d{2}))");
  std::smatch m;
  if (!std::regex_match(text, m, kTime)) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  std::time_t seconds = ::timegm(&tm);
  if (m[9].matched) {
    const int offset = std::stoi(m[10]) * 3600 + std::stoi(m[11]) * 60;
    seconds -= m[9] == "+" ? offset : -offset;
  }
  return std::chrono::system_clock::from_time_t(seconds);
}

inline Result<ReadFeatureFile> readNfdFeatureFile(const std::string& text,
                                                  std::chrono::system_clock::time_point now) {
  if (text.size() > 65536) {
    return makeError("larger than NFD's 64 KiB limit");
  }
  ReadFeatureFile out;
  std::optional<std::chrono::system_clock::time_point> expiry;
  size_t start = 0;
  for (int number = 1; start <= text.size(); ++number) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    std::string line = text.substr(start, end - start);
    start = end + 1;
    const std::string where = "line " + std::to_string(number) + " '" + line + "': ";
    line.erase(0, line.find_first_not_of(" \t\r\v\f"));
    line.erase(line.find_last_not_of(" \t\r\v\f") + 1);
    if (line.empty()) {
      continue;
    }
    if (line[0] == '#') {
      if (line.rfind("# +", 0) != 0) {
        continue; // a comment
      }
      const std::string directive = line.substr(3);
      const auto eq = directive.find('=');
      const std::string key = directive.substr(0, eq);
      if (key == "expiry-time") {
        auto time = eq == std::string::npos ? std::nullopt : parseRfc3339(directive.substr(eq + 1));
        if (!time) {
          return makeError(where + "expiry-time is not RFC 3339");
        }
        expiry = out.expiry = time;
      } else if (key != "no-label" && key != "no-feature") {
        return makeError(where + "unknown directive");
      }
      continue;
    }
    const auto eq = line.find('=');
    const std::string name = line.substr(0, eq);
    const std::string value = eq == std::string::npos ? "true" : line.substr(eq + 1);
    const auto slash = name.find('/');
    if (slash == std::string::npos) {
      return makeError(where + "no namespace (NFD would put it under feature.node.kubernetes.io)");
    }
    const std::string prefix = name.substr(0, slash);
    if (!isDnsSubdomain(prefix) || !isLabelName(name.substr(slash + 1))) {
      return makeError(where + "not a label name");
    }
    if (prefix == "kubernetes.io" ||
        (prefix.ends_with(".kubernetes.io") && prefix != "feature.node.kubernetes.io" &&
         !prefix.ends_with(".feature.node.kubernetes.io"))) {
      return makeError(where + "a kubernetes.io namespace, which NFD refuses");
    }
    if (!isLabelValue(value)) {
      return makeError(where + "not a label value");
    }
    if (expiry && *expiry < now) {
      continue; // expired: NFD drops it
    }
    out.labels[name] = value;
  }
  return out;
}

// The labels of the A100 RoCE fixture (eight 200 Gb/s RoCE data ports, nvidia_peermem loaded),
// as both daemons write them.
inline const std::map<std::string, std::string> kA100RoceLabels{
    {"kube-rdma.io/data-ports", "8"},        {"kube-rdma.io/data-ports-active", "8"},
    {"kube-rdma.io/gpudirect-rdma", "true"}, {"kube-rdma.io/port-rate-gbps", "200"},
    {"kube-rdma.io/rdma", "true"},           {"kube-rdma.io/roce", "true"}};

} // namespace kube_rdma
