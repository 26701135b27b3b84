#include "common/util/command_line.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "common/util/listen_address.h"
#include "common/util/strings.h"

namespace kube_rdma {

std::unique_ptr<CLI::App> makeApp(const std::string& program, const std::string& description) {
  auto app = std::make_unique<CLI::App>(description, program);
  app->option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  app->set_version_flag("--version", program + " " + KUBE_RDMA_VERSION);
  return app;
}

Result<std::string> parseArgs(CLI::App& app, const std::vector<std::string>& args) {
  // CLI11's vector overload wants the arguments reversed and then lists unexpected ones
  // backwards; argv order with a program name keeps its messages in the order typed.
  std::vector<const char*> argv = {app.get_name().c_str()};
  for (const std::string& arg : args) {
    argv.push_back(arg.c_str());
  }
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    return app.help();
  } catch (const CLI::CallForVersion& version) {
    return std::string(version.what()) + "\n";
  } catch (const CLI::ExtrasError&) {
    // Said here because CLI11 2.1's own message lists the arguments backwards.
    const std::vector<std::string> extras = app.remaining(true);
    return makeError((extras.size() == 1 ? "unexpected argument: " : "unexpected arguments: ") +
                     joinStrings(extras, " "));
  } catch (const CLI::ParseError& error) {
    return makeError(error.what());
  }
  return std::string();
}

CLI::Option* addCheckedOption(CLI::App& app, const std::string& name, StoreText store,
                              const std::string& description) {
  return app.add_option_function<std::string>(
      name,
      [name, store = std::move(store)](const std::string& text) {
        if (std::string problem = store(text); !problem.empty()) {
          throw CLI::ValidationError(name, problem);
        }
      },
      description);
}

CLI::Option* addDurationOption(CLI::App& app, const std::string& name,
                               std::chrono::milliseconds min, std::chrono::milliseconds max,
                               StoreDuration store, const std::string& description) {
  auto check = [min, max, store = std::move(store)](const std::string& text) -> std::string {
    Result<std::chrono::milliseconds> duration = parseDuration(text);
    if (!duration) {
      return duration.error().message;
    }
    if (*duration < min || *duration > max) {
      return "'" + text + "' is outside " + formatDuration(min) + ".." + formatDuration(max);
    }
    return store(*duration);
  };
  return addCheckedOption(app, name, std::move(check), description)->type_name("DURATION");
}

StoreDuration wholeSeconds(std::chrono::seconds& field) {
  return [&field](std::chrono::milliseconds duration) -> std::string {
    if (duration.count() % 1000 != 0) {
      return "'" + formatDuration(duration) + "' is not a whole number of seconds";
    }
    field = std::chrono::duration_cast<std::chrono::seconds>(duration);
    return "";
  };
}

void addLogFormatOption(CLI::App& app, LogFormat& format) {
  auto store = [&format](const std::string& text) -> std::string {
    return parseLogFormat(text, format) ? "" : "must be text or json, not '" + text + "'";
  };
  addCheckedOption(app, "--log-format", std::move(store),
                   "log lines as text or json (default text)")
      ->type_name("FORMAT");
}

void addNodeRootOptions(CLI::App& app, std::string& sysfs_root, std::string& proc_root,
                        std::string& dev_root) {
  const auto root = [&app](const std::string& name, std::string& field, const std::string& about) {
    addCheckedOption(
        app, name,
        [&field](const std::string& text) -> std::string {
          if (text.empty()) {
            return "needs a directory";
          }
          field = text;
          return "";
        },
        about + " (default " + field + ")")
        ->type_name("DIR");
  };
  root("--sysfs-root", sysfs_root, "sysfs to read");
  root("--proc-root", proc_root, "procfs to read: the default route, modules, limits");
  root("--dev-root", dev_root, "where /dev/infiniband nodes are checked");
}

void addPodResourcesSocketOption(CLI::App& app, std::string& socket) {
  app.add_option("--pod-resources-socket", socket,
                 "the kubelet's PodResources API, asked at each scrape which pod holds which port "
                 "(default: off)")
      ->type_name("PATH");
}

void addNriOptions(CLI::App& app, std::string& socket, std::string& host_proc_root) {
  app.add_option("--nri-socket", socket,
                 "the container runtime's NRI socket: give containers on a pod network their own "
                 "NCCL_IB_GID_INDEX in the environment (default: off)")
      ->type_name("PATH");
  app.add_option("--host-proc-root", host_proc_root,
                 "the host's procfs, where the NRI plugin reads a pod's network (default /proc)")
      ->type_name("DIR")
      ->check(CLI::ExistingDirectory);
}

void addMetricsAddressOption(CLI::App& app, std::string& address, const std::string& description) {
  addCheckedOption(
      app, "--metrics-address",
      [&address](const std::string& text) -> std::string {
        if (Result<ListenAddress> parsed = parseListenAddress(text); !parsed) {
          return parsed.error().message;
        }
        address = text;
        return "";
      },
      description)
      ->type_name("HOST:PORT");
}

void addNfdFeaturesOptions(CLI::App& app, std::string& file, std::chrono::seconds& ttl) {
  app.add_option("--nfd-features-file", file,
                 "write node labels there for Node Feature Discovery's local source, e.g. "
                 "/etc/kubernetes/node-feature-discovery/features.d/kube-rdma (default: off)")
      ->type_name("FILE");
  addDurationOption(
      app, "--nfd-features-ttl", std::chrono::seconds(2), std::chrono::hours(24), wholeSeconds(ttl),
      "how long NFD keeps the labels if the daemon stops rewriting them; rewritten half-way "
      "(default " +
          formatDuration(ttl) + ")");
}

Result<std::chrono::milliseconds> parseDuration(std::string_view text) {
  auto invalid = [text] {
    return makeError("'" + std::string(text) + "' is not a duration (examples: 500ms, 5s, 1m30s)");
  };
  // A year in milliseconds bounds every part and the sum, so nothing overflows.
  constexpr uint64_t kLimit = 365ull * 24 * 3600 * 1000;
  const char* at = text.data();
  const char* const end = text.data() + text.size();
  uint64_t total = 0;
  do {
    uint64_t number = 0;
    const auto [rest, ec] = std::from_chars(at, end, number);
    if (ec != std::errc()) {
      return invalid();
    }
    const char* unit_end = std::find_if(rest, end, [](char c) { return c >= '0' && c <= '9'; });
    const std::string_view unit(rest, static_cast<size_t>(unit_end - rest));
    const bool bare = at == text.data() && rest == end; // a plain number of seconds
    const uint64_t scale = unit == "ms"          ? 1
                           : unit == "s" || bare ? 1000
                           : unit == "m"         ? 60'000
                           : unit == "h"         ? 3'600'000
                                                 : 0;
    if (scale == 0 || number > kLimit / scale || total + number * scale > kLimit) {
      return invalid();
    }
    total += number * scale;
    at = unit_end;
  } while (at != end);
  return std::chrono::milliseconds(total);
}

std::string formatDuration(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  if (ms % 3'600'000 == 0 && ms != 0) {
    return std::to_string(ms / 3'600'000) + "h";
  }
  if (ms % 60'000 == 0 && ms != 0) {
    return std::to_string(ms / 60'000) + "m";
  }
  if (ms % 1000 == 0) {
    return std::to_string(ms / 1000) + "s";
  }
  return std::to_string(ms) + "ms";
}

} // namespace kube_rdma
