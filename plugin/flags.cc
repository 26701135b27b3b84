#include "plugin/flags.h"

#include <charconv>
#include <functional>
#include <map>
#include <optional>

namespace kube_rdma {

Result<std::chrono::milliseconds> parseDuration(const std::string& text) {
  uint64_t number = 0;
  const char* end = text.data() + text.size();
  auto [rest, ec] = std::from_chars(text.data(), end, number);
  if (ec != std::errc() || rest == text.data()) {
    return makeError("'" + text + "' is not a duration (examples: 250ms, 30s, 2m)");
  }
  const std::string unit(rest, end);
  if (unit == "ms") {
    return std::chrono::milliseconds(number);
  }
  if (unit == "s" || unit.empty()) {
    return std::chrono::milliseconds(number * 1000);
  }
  if (unit == "m") {
    return std::chrono::milliseconds(number * 60000);
  }
  return makeError("'" + text + "' has an unknown unit '" + unit + "' (use ms, s or m)");
}

Result<PluginFlags> parsePluginFlags(const std::vector<std::string>& args) {
  PluginFlags flags;
  using Setter = std::function<Status(const std::string&)>;
  auto text = [](std::string& field) {
    return Setter([&field](const std::string& v) -> Status {
      field = v;
      return Ok{};
    });
  };
  auto duration = [](std::optional<std::chrono::milliseconds>& field) {
    return Setter([&field](const std::string& v) -> Status {
      auto parsed = parseDuration(v);
      if (!parsed) {
        return parsed.error();
      }
      if (parsed->count() == 0) {
        return makeError("must be more than zero");
      }
      field = *parsed;
      return Ok{};
    });
  };
  const std::map<std::string, Setter> valued = {
      {"config", text(flags.config_path)},
      {"sysfs-root", text(flags.sysfs_root)},
      {"proc-root", text(flags.proc_root)},
      {"dev-root", text(flags.dev_root)},
      {"device-plugin-dir", text(flags.device_plugin_dir)},
      {"plugin-registry-dir", text(flags.plugin_registry_dir)},
      {"state-dir", text(flags.state_dir)},
      {"metrics-address", text(flags.metrics_address)},
      {"node-name", text(flags.node_name)},
      {"cdi-dir", text(flags.cdi_dir)},
      {"resend-interval", duration(flags.resend_interval)},
      {"health-interval", duration(flags.health_interval)},
      {"log-format",
       [&flags](const std::string& v) -> Status {
         if (!parseLogFormat(v, flags.log_format)) {
           return makeError("must be text or json, not '" + v + "'");
         }
         return Ok{};
       }},
  };
  const std::map<std::string, bool*> switches = {{"cdi", &flags.cdi}, {"help", &flags.help}};

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      return makeError("unexpected argument '" + arg + "' (flags start with --)");
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (auto it = switches.find(name); it != switches.end()) {
      if (value && *value != "true" && *value != "false") {
        return makeError("--" + name + " takes no value or true/false, not '" + *value + "'");
      }
      *it->second = !value || *value == "true";
      continue;
    }
    auto it = valued.find(name);
    if (it == valued.end()) {
      return makeError("unknown flag --" + name + " (see --help)");
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        return makeError("--" + name + " needs a value");
      }
      value = args[++i];
    }
    if (auto status = it->second(*value); !status) {
      return makeError("--" + name + ": " + status.error().message);
    }
  }
  return flags;
}

std::string pluginUsage() {
  return R"(rdma-device-plugin: advertises RDMA HCAs to the kubelet and hands them out.

  --config FILE              pools and NCCL options (JSON); default: rdma/hca (InfiniBand) and
                             rdma/shared (RoCE), both shared, management NIC and VFs left out
  --sysfs-root DIR           default /sys
  --proc-root DIR            default /proc
  --dev-root DIR             where device nodes are checked (default /dev); containers always
                             get host paths under /dev
  --device-plugin-dir DIR    default /var/lib/kubelet/device-plugins
  --plugin-registry-dir DIR  default /var/lib/kubelet/plugins_registry; when it exists the
                             plugin-watcher registration is used, else Register on kubelet.sock
  --state-dir DIR            topology.json and nccl.conf files (default /var/run/kube-rdma)
  --metrics-address H:P      serve /metrics and /healthz (default: off)
  --node-name NAME           for logs
  --log-format text|json     default text
  --resend-interval D        ListAndWatch full re-send period (default: the config's
                             resend_interval_seconds, 30s)
  --health-interval D        port state / device node re-read period (default: the config's
                             health_poll_ms, 500ms)
  --cdi                      write a CDI spec and return cdi_devices in Allocate
  --cdi-dir DIR              default /var/run/cdi
)";
}

} // namespace kube_rdma
