#include "common/pools/plugin_config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include "common/util/json_reader.h"
#include "common/node/sysfs_attributes.h"
#include "common/node/topology.h"

namespace kube_rdma {
namespace {

// The plugin computes these for exactly the granted devices (DESIGN.md); a pool's env must not
// fight them.
constexpr std::array<std::string_view, 5> kReservedEnvNames = {
    "NCCL_IB_HCA", "NCCL_IB_DISABLE", "NCCL_IB_GID_INDEX", "KUBE_RDMA_DEVICES",
    "KUBE_RDMA_NETDEVS"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "0x15b3": the form sysfs prints vendor and device files in.
bool isPciId(std::string_view s) {
  return s.size() == 6 && s.starts_with("0x") &&
         std::all_of(s.begin() + 2, s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

bool isQualifiedNamePart(std::string_view s) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

Status validateContainerPath(const std::string& path) {
  if (path.empty() || path.front() != '/' || path == "/" || path.back() == '/') {
    return makeError("must be an absolute file path such as /etc/nccl.conf");
  }
  if (path.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
    return makeError("must not contain a newline or NUL");
  }
  if (("/" + path + "/").find("/../") != std::string::npos ||
      ("/" + path + "/").find("/./") != std::string::npos) {
    return makeError("must not contain \".\" or \"..\" components");
  }
  return Ok{};
}

// Reads an array of strings; `lower_case` lists are compared case-insensitively, so they are
// lower-cased (the form sysfs prints) before `valid` checks them.
void readStringList(ObjectReader& reader, const std::string& key, std::vector<std::string>& out,
                    bool (*valid)(std::string_view), const std::string& expected, bool lower_case) {
  const auto items = reader.optional<std::vector<std::string>>(key, {});
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item = lower_case ? lower(items[i]) : items[i];
    if (item.empty() || (valid != nullptr && !valid(item))) {
      reader.failAt(jsonIndexPath(reader.pathOf(key), i),
                    "expected " + expected + ", got \"" + items[i] + "\"");
      continue;
    }
    out.push_back(item);
  }
}

PoolSelector readSelector(ObjectReader& pool) {
  PoolSelector s;
  ObjectReader r = pool.object("selector");
  const std::string layer = r.optionalEnum("linkLayer", {"InfiniBand", "Ethernet"}, "");
  if (!layer.empty()) {
    s.link_layer = *parseLinkLayer(layer); // optionalEnum let only the kernel's spellings through
  }
  readStringList(r, "deviceNames", s.device_names, nullptr, "a device-name glob", false);
  readStringList(r, "netdevNames", s.netdev_names, nullptr, "a netdev-name glob", false);
  readStringList(r, "vendors", s.vendors, isPciId, "a PCI vendor ID like \"0x15b3\"", true);
  readStringList(r, "deviceIDs", s.device_ids, isPciId, "a PCI device ID like \"0x101b\"", true);
  readStringList(r, "drivers", s.drivers, nullptr, "a driver name like \"mlx5_core\"", false);
  readStringList(r, "pciAddresses", s.pci_addresses, isPciAddress,
                 "a PCI address like \"0000:3b:00.0\"", true);
  readStringList(r, "exclude", s.exclude, nullptr, "a device-name glob", false);
  s.include_management = r.optional<bool>("includeManagement", false);
  s.include_vfs = r.optional<bool>("includeVFs", false);
  r.finish();
  return s;
}

void readGidIndex(ObjectReader& r, NcclPoolOptions& n) {
  const nlohmann::json* gid = r.raw("gidIndex");
  if (gid == nullptr) {
    return;
  }
  constexpr int64_t kMaxGidIndex = 65535;
  if (gid->is_string() && gid->get<std::string>() == "unset") {
    n.gid_index_mode = GidIndexMode::kUnset;
  } else if (gid->is_string() && gid->get<std::string>() == "agreed") {
    n.gid_index_mode = GidIndexMode::kAgreed;
  } else if (gid->is_number_integer() && gid->get<int64_t>() >= 0 &&
             gid->get<int64_t>() <= kMaxGidIndex) {
    n.gid_index_mode = GidIndexMode::kFixed;
    n.gid_index = static_cast<uint32_t>(gid->get<int64_t>());
  } else {
    r.fail("gidIndex", "expected \"unset\", \"agreed\" or an integer from 0 to " +
                           std::to_string(kMaxGidIndex) + ", got " + describeJson(*gid));
  }
}

void readGidPolicy(ObjectReader& r, NcclPoolOptions& n) {
  const std::string family = r.optionalEnum("addrFamily", {"AF_INET", "AF_INET6"}, "AF_INET");
  n.gid_policy.family = family == "AF_INET6" ? GidFamily::kIPv6 : GidFamily::kIPv4;
  if (auto range = r.maybe<std::string>("addrRange")) {
    auto cidr = parseCidr(*range);
    if (!cidr.ok()) {
      r.fail("addrRange", cidr.error().message);
    } else if (cidr->family != n.gid_policy.family) {
      r.fail("addrRange", "\"" + *range + "\" is not in addrFamily " + family);
    } else {
      n.gid_policy.range = *cidr;
    }
  }
}

void readEnv(ObjectReader& r, NcclPoolOptions& n) {
  const auto env = r.optional<std::map<std::string, std::string>>("env", {});
  for (const auto& [name, value] : env) {
    const std::string key = jsonChildPath(r.pathOf("env"), name);
    if (!isPortableEnvName(name)) {
      r.failAt(key, "name must be letters, digits and '_' (not starting with a digit)");
    } else if (std::find(kReservedEnvNames.begin(), kReservedEnvNames.end(), name) !=
               kReservedEnvNames.end()) {
      r.failAt(key, name + " is computed on the node for the granted devices" +
                        std::string(name == "NCCL_IB_GID_INDEX" ? "; use gidIndex" : ""));
    } else if (value.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
      r.failAt(key, "value must not contain a newline, carriage return or NUL");
    } else if (name.size() > kNcclConfMaxLength || value.size() > kNcclConfMaxLength) {
      r.failAt(key, "longer than NCCL's 1023-byte limit");
    } else {
      n.env.emplace_back(name, value);
    }
  }
}

void readSharedCount(ObjectReader& r, PoolSpec& pool) {
  const nlohmann::json* count = r.raw("sharedCount");
  if (count == nullptr) {
    return;
  }
  if (pool.mode == PoolMode::kExclusive) {
    r.fail("sharedCount", "applies only to shared pools (exclusive pools have one ID per HCA)");
  } else if (count->is_string() && count->get<std::string>() == "auto") {
    pool.shared_count.reset();
  } else if (count->is_number_integer() && count->get<int64_t>() >= 1 &&
             count->get<int64_t>() <= kMaxSharedCount) {
    pool.shared_count = static_cast<uint32_t>(count->get<int64_t>());
  } else {
    r.fail("sharedCount", "expected \"auto\" or an integer from 1 to " +
                              std::to_string(kMaxSharedCount) + ", got " + describeJson(*count));
  }
}

PoolSpec readPool(ObjectReader& r) {
  PoolSpec pool;
  pool.resource_name = r.required<std::string>("resourceName");
  if (const nlohmann::json* name = r.raw("resourceName"); name != nullptr && name->is_string()) {
    if (auto ok = validateExtendedResourceName(pool.resource_name); !ok.ok()) {
      r.fail("resourceName", ok.error().message);
    }
  }
  pool.selector = readSelector(r);
  pool.mode = r.optionalEnum("mode", {"shared", "exclusive"}, "shared") == "exclusive"
                  ? PoolMode::kExclusive
                  : PoolMode::kShared;
  readSharedCount(r, pool);
  ObjectReader nccl = r.object("nccl");
  readNcclOptions(nccl, pool.nccl);
  nccl.finish();
  r.finish();
  return pool;
}

// An absolute host path the runtime can exec or append to; the hook's argument is one CDI string.
void readHostPath(ObjectReader& r, const std::string& key, std::string& out) {
  out = r.optional<std::string>(key, out);
  if (out.empty() || out.front() != '/' || out.back() == '/') {
    r.fail(key, "must be an absolute file path on the host, got \"" + out + "\"");
  } else if (out.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
    r.fail(key, "must not contain a newline or NUL");
  }
}

PoolSpec defaultPool(const std::string& resource_name, LinkLayer layer) {
  PoolSpec pool;
  pool.resource_name = resource_name;
  pool.selector.link_layer = layer;
  return pool;
}

bool isDnsLabel(std::string_view label) {
  if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
    return false;
  }
  return std::all_of(label.begin(), label.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

} // namespace

bool isDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) {
    return false;
  }
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    if (!isDnsLabel(s.substr(start, dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

uint32_t sharedDeviceCount(const PoolSpec& pool, size_t hca_count) {
  if (pool.mode == PoolMode::kExclusive) {
    return static_cast<uint32_t>(hca_count);
  }
  if (pool.shared_count) {
    return *pool.shared_count;
  }
  return static_cast<uint32_t>(
      std::min<size_t>(hca_count * kAutoSharedPerHca, static_cast<size_t>(kMaxSharedCount)));
}

PluginConfig defaultPluginConfig() {
  PluginConfig config;
  config.pools = {defaultPool("rdma/hca", LinkLayer::kInfiniBand),
                  defaultPool("rdma/shared", LinkLayer::kEthernet)};
  return config;
}

void readNcclOptions(ObjectReader& r, NcclPoolOptions& n) {
  readGidIndex(r, n);
  readGidPolicy(r, n);
  if (r.has("ncclConf")) {
    ObjectReader conf = r.object("ncclConf");
    n.nccl_conf_enabled = conf.optional<bool>("enabled", n.nccl_conf_enabled);
    n.nccl_conf_path = conf.optional<std::string>("containerPath", n.nccl_conf_path);
    if (auto ok = validateContainerPath(n.nccl_conf_path); !ok.ok()) {
      conf.fail("containerPath", ok.error().message);
    }
    conf.finish();
  }
  readEnv(r, n);
}

MemlockLimit readMemlockLimit(ObjectReader& r, const std::string& key, MemlockLimit fallback) {
  const nlohmann::json* value = r.raw(key);
  if (value == nullptr) {
    return fallback;
  }
  if (value->is_string() && (*value == "unlimited" || *value == "off")) {
    return *parseMemlockLimit(value->get<std::string>());
  }
  if (value->is_number_integer() && *value >= 0 && value->get<uint64_t>() >= kMinMemlockBytes) {
    return MemlockLimit{MemlockLimit::Mode::kBytes, value->get<uint64_t>()};
  }
  r.fail(key, "expected \"unlimited\", \"off\" or an integer byte count of at least " +
                  std::to_string(kMinMemlockBytes) + ", got " + describeJson(*value));
  return fallback;
}

Status validateExtendedResourceName(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos || name.find('/', slash + 1) != std::string::npos) {
    return makeError("\"" + name + "\" must be one \"domain/name\", like rdma/hca");
  }
  const std::string domain = name.substr(0, slash);
  const std::string local = name.substr(slash + 1);
  // Kubernetes checks "requests." + name as a qualified name, so the domain has 9 bytes less.
  if (!isDnsSubdomain("requests." + domain)) {
    return makeError("\"" + name + "\": domain \"" + domain +
                     "\" must be a lower-case DNS subdomain of at most 244 characters");
  }
  if (domain == "kubernetes.io" || domain.ends_with(".kubernetes.io")) {
    return makeError("\"" + name + "\": the kubernetes.io domain is reserved for native resources");
  }
  if (!isQualifiedNamePart(local)) {
    return makeError("\"" + name + "\": name \"" + local +
                     "\" must be 1-63 letters, digits, '-', '_' or '.', starting and ending with "
                     "a letter or digit");
  }
  return Ok{};
}

bool resolvesGidPerContainer(const NcclHookConfig& hook, const NcclPoolOptions& nccl) {
  return hook.enabled && nccl.gid_index_mode == GidIndexMode::kAgreed && nccl.nccl_conf_enabled;
}

Result<PluginConfig> parsePluginConfig(const std::string& json_text) {
  auto doc = parseJsonDocument(json_text, "config");
  if (!doc.ok()) {
    return doc.error();
  }
  JsonErrors errors;
  ObjectReader root = ObjectReader::root(*doc, errors);
  PluginConfig config = defaultPluginConfig();
  root.optionalEnum("version", {"v1"}, "v1");
  config.resend_interval_seconds =
      static_cast<uint32_t>(root.optionalInt("resendIntervalSeconds", 1, 3600, 30));
  config.health_poll_ms = static_cast<uint32_t>(root.optionalInt("healthPollMs", 50, 10000, 500));
  config.unused_rdma_after_seconds =
      static_cast<uint32_t>(root.optionalInt("unusedRdmaAfterSeconds", 0, 86400, 900));
  config.memlock.limit = readMemlockLimit(root, "memlock", config.memlock.limit);
  readHostPath(root, "memlockHookPath", config.memlock.hook_path);
  readHostPath(root, "memlockLogFile", config.memlock.log_file);
  config.nccl_hook.enabled = root.optional<bool>("perContainerGidIndex", config.nccl_hook.enabled);
  readHostPath(root, "ncclHookPath", config.nccl_hook.hook_path);
  readHostPath(root, "ncclHookLogFile", config.nccl_hook.log_file);
  readHostPath(root, "ncclHookSysfsRoot", config.nccl_hook.sysfs_root);
  if (root.has("pools")) {
    auto pools = root.objectArray("pools");
    if (pools.empty() && root.raw("pools")->is_array()) {
      root.fail("pools", "at least one pool is needed (leave \"pools\" out for the defaults)");
    }
    config.pools.clear();
    std::map<std::string, size_t> first_index;
    for (size_t i = 0; i < pools.size(); ++i) {
      PoolSpec pool = readPool(pools[i]);
      auto [it, inserted] = first_index.emplace(pool.resource_name, i);
      if (!inserted && !pool.resource_name.empty()) {
        pools[i].fail("resourceName", "\"" + pool.resource_name + "\" is already used by " +
                                          jsonIndexPath("$.pools", it->second));
      }
      config.pools.push_back(std::move(pool));
    }
  }
  root.finish();
  if (auto status = errors.status(); !status.ok()) {
    return makeError("config: " + status.error().message);
  }
  return config;
}

Result<PluginConfig> loadPluginConfig(const std::string& path) {
  if (path.empty()) {
    return defaultPluginConfig();
  }
  auto text = readAttribute(path, kMaxConfigFileBytes);
  if (!text) {
    return makeError("cannot read config file: " + text.error().message);
  }
  auto config = parsePluginConfig(*text);
  if (!config) {
    return makeError(path + ": " + config.error().message);
  }
  return config;
}

} // namespace kube_rdma
