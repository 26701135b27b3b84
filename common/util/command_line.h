#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/util/log.h"
#include "common/util/result.h"

// The command line of every kube-rdma program, on CLI11: the same --help and --version, the same
// duration syntax, and errors returned rather than printed, so that parsing stays a pure function
// the tests call without starting anything.
namespace kube_rdma {

// An App for `program` with --help and --version. A repeated flag takes its last value, so an
// argument appended to a manifest's list overrides the one before it.
std::unique_ptr<CLI::App> makeApp(const std::string& program, const std::string& description);

// Parses `args` (argv without the program name) into `app`'s options. Returns the text that
// --help or --version asks for (print it and exit 0), or "" to run. A wrong command line is an
// error that names the flag or the argument.
Result<std::string> parseArgs(CLI::App& app, const std::vector<std::string>& args);

// parseArgs into the `flags` that `app`'s options write, with the --help or --version text in
// flags.exit_message.
template <typename Flags>
Result<Flags> parseFlags(CLI::App& app, const std::vector<std::string>& args, Flags& flags) {
  Result<std::string> parsed = parseArgs(app, args);
  if (!parsed) {
    return parsed.error();
  }
  flags.exit_message = std::move(*parsed);
  return std::move(flags);
}

// Adds `--name VALUE`; `store` takes the text and returns why it is wrong, or "" to accept it.
// A rejection reads "--name: <why>".
using StoreText = std::function<std::string(const std::string&)>;
CLI::Option* addCheckedOption(CLI::App& app, const std::string& name, StoreText store,
                              const std::string& description);

// Adds `--name DURATION` (parseDuration's syntax) between `min` and `max`; `store` takes the
// value and returns why it is wrong, or "" to accept it.
using StoreDuration = std::function<std::string(std::chrono::milliseconds)>;
CLI::Option* addDurationOption(CLI::App& app, const std::string& name,
                               std::chrono::milliseconds min, std::chrono::milliseconds max,
                               StoreDuration store, const std::string& description);
// A StoreDuration that accepts whole seconds only and stores them in `field`.
StoreDuration wholeSeconds(std::chrono::seconds& field);

// Adds --log-format text|json, the daemons' log line format.
void addLogFormatOption(CLI::App& app, LogFormat& format);

// Adds --sysfs-root, --proc-root and --dev-root DIR: where the program reads the node (a DaemonSet
// mounts the host's under /host). What a container is given always names the host's /dev paths.
// An empty value is refused.
void addNodeRootOptions(CLI::App& app, std::string& sysfs_root, std::string& proc_root,
                        std::string& dev_root);

// Adds --metrics-address HOST:PORT, checked as the address to listen on (parseListenAddress):
// where /metrics and the probes are served over plain HTTP; `address` keeps "" (off) unless given.
void addMetricsAddressOption(CLI::App& app, std::string& address, const std::string& description);

// Adds --pod-resources-socket PATH, the kubelet's PodResources socket both kubelet plugins may
// ask which pod holds which port (kube_rdma_pod_port_info); `socket` keeps "" (off) unless given.
void addPodResourcesSocketOption(CLI::App& app, std::string& socket);

// Adds --nri-socket PATH, the container runtime's NRI socket the node daemons connect to as a
// plugin (nri/; `socket` keeps "" (off) unless given), and --host-proc-root DIR, the host's
// procfs, where a pod sandbox's process shows its network namespace (default /proc).
void addNriOptions(CLI::App& app, std::string& socket, std::string& host_proc_root);

// Adds --nfd-features-file FILE and --nfd-features-ttl DURATION (whole seconds, at least 2 s), the
// node labels both kubelet plugins can write for Node Feature Discovery (docs/node-labels.md).
// `ttl` keeps its value unless the flag is given.
void addNfdFeaturesOptions(CLI::App& app, std::string& file, std::chrono::seconds& ttl);

// Go's duration units ms, s, m and h in whole numbers, alone or combined ("500ms", "5s", "1m30s"),
// or a bare whole number of seconds (what every duration flag took before units existed).
Result<std::chrono::milliseconds> parseDuration(std::string_view text);

// The shortest spelling parseDuration reads back: "0s", "250ms", "90s", "5m", "24h".
std::string formatDuration(std::chrono::milliseconds duration);

} // namespace kube_rdma
