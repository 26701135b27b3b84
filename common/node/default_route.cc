#include "common/node/default_route.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "common/util/strings.h"
#include "common/node/sysfs_attributes.h"

namespace kube_rdma {
namespace {

constexpr uint32_t kRtfUp = 0x0001;
constexpr uint32_t kRtfReject = 0x0200;
// Route tables of large hosts run to thousands of lines.
constexpr size_t kMaxRouteFileBytes = size_t{16} * 1024 * 1024;

std::vector<std::string_view> splitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (size_t start = line.find_first_not_of(" \t"); start != std::string_view::npos;) {
    const size_t end = line.find_first_of(" \t", start);
    fields.push_back(line.substr(start, end - start));
    start = line.find_first_not_of(" \t", end);
  }
  return fields;
}

bool allZeroHex(std::string_view text) {
  return text.find_first_not_of('0') == std::string::npos;
}

struct Best {
  std::string iface;
  uint32_t metric = std::numeric_limits<uint32_t>::max();
  void offer(std::string_view name, uint32_t m) {
    if (iface.empty() || m < metric) {
      iface = std::string(name);
      metric = m;
    }
  }
};

// Calls on_line(number, fields, best) for each non-empty line from `first_line` on (1-based
// numbers), which offers `best` the default routes; the interface of the best, "" for none.
template <class F>
Result<std::string> bestDefaultRoute(std::string_view text, size_t first_line, F&& on_line) {
  Best best;
  size_t number = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++number;
    if (number < first_line) {
      continue;
    }
    const auto fields = splitFields(line);
    if (fields.empty()) {
      continue;
    }
    if (auto st = on_line(number, fields, best); !st) {
      return st.error();
    }
  }
  return best.iface;
}

// The default route's interface in the route file at `path`, as `parse` finds it.
Result<std::string> readDefaultRoute(const std::string& path,
                                     Result<std::string> (*parse)(std::string_view)) {
  auto text = readAttribute(path, kMaxRouteFileBytes);
  if (!text) {
    return text.error();
  }
  auto iface = parse(*text);
  if (!iface) {
    return makeError(path + ": " + iface.error().message);
  }
  return iface;
}

} // namespace

Result<std::string> parseIpv4DefaultRoute(std::string_view text) {
  const auto on_line = [](size_t number, const std::vector<std::string_view>& f, Best& best) {
    if (f.size() < 8) {
      return Status(lineError("route", number,
                              "has " + std::to_string(f.size()) + " fields, expected at least 8"));
    }
    const auto dest = parseWhole<uint32_t>(f[1], 16);
    const auto flags = parseWhole<uint32_t>(f[3], 16);
    const auto mask = parseWhole<uint32_t>(f[7], 16);
    if (!dest || !flags || !mask) {
      return Status(lineError("route", number, "destination, flags or mask is not hexadecimal"));
    }
    const auto metric = parseWhole<uint32_t>(f[6]);
    if (!metric) {
      return Status(lineError("route", number, "metric is not a number"));
    }
    if (*dest == 0 && *mask == 0 && (*flags & kRtfUp) && !(*flags & kRtfReject)) {
      best.offer(f[0], *metric);
    }
    return Status(Ok{});
  };
  return bestDefaultRoute(text, 2, on_line);
}

Result<std::string> parseIpv6DefaultRoute(std::string_view text) {
  const auto on_line = [](size_t number, const std::vector<std::string_view>& f, Best& best) {
    if (f.size() != 10) {
      return Status(lineError("ipv6_route", number,
                              "has " + std::to_string(f.size()) + " fields, expected 10"));
    }
    const auto plen = parseWhole<uint32_t>(f[1], 16);
    const auto metric = parseWhole<uint32_t>(f[5], 16);
    const auto flags = parseWhole<uint32_t>(f[8], 16);
    if (f[0].size() != 32 || !plen || !metric || !flags) {
      return Status(lineError("ipv6_route", number,
                              "destination, prefix length, metric or flags is malformed"));
    }
    if (allZeroHex(f[0]) && *plen == 0 && (*flags & kRtfUp) && !(*flags & kRtfReject)) {
      best.offer(f[9], *metric);
    }
    return Status(Ok{});
  };
  return bestDefaultRoute(text, 1, on_line);
}

Result<std::string> findDefaultRouteNetdev(const std::string& proc_root) {
  auto iface = readDefaultRoute(proc_root + "/net/route", parseIpv4DefaultRoute);
  if (!iface || !iface->empty()) {
    return iface;
  }
  return readDefaultRoute(proc_root + "/net/ipv6_route", parseIpv6DefaultRoute);
}

} // namespace kube_rdma
