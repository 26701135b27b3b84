// kube-rdma-nccl-hook: the OCI hook (createContainer) that gives a container on a pod network the
// RoCE GID index of its own network namespace. The node daemons write the node's NCCL settings
// into an nccl.conf before the pod's network exists; by the time this hook runs, CNI (Multus and
// its macvlan or ipvlan secondaries included) has given the pod its addresses and the kernel has
// added them as GIDs of the shared port. The hook runs in the container's namespaces before
// pivot_root: it reads the GID tables, keeps the entries holding an address of its own namespace,
// and bind-mounts a copy of the nccl.conf with that NCCL_IB_GID_INDEX over the container's
// (docs/pod-networks.md).
//
//   kube-rdma-nccl-hook [OPTIONS] < OCI-state-JSON
//
// It never stops a container from starting and never delays one by more than 2 s: whatever
// happens it exits 0, and the container keeps the node's nccl.conf. Each run appends one line to
// the log file, naming the pod, and counts its outcome beside it (common/hook_outcomes.h).

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "common/container_nccl.h"
#include "common/gid_selection.h"
#include "common/hook_outcomes.h"
#include "common/log.h"
#include "common/netns_links.h"
#include "common/oci_hook.h"
#include "common/strings.h"
#include "common/sysfs_attributes.h"
#include "common/sysfs_discovery.h"

namespace kube_rdma {
namespace {

constexpr unsigned kDeadlineSeconds = 2;
constexpr const char* kProgram = "kube-rdma-nccl-hook";

constexpr const char* kUsage =
    "kube-rdma-nccl-hook: the OCI hook (createContainer) that sets a container's RoCE GID index\n"
    "to the GID of its own network namespace, in its nccl.conf\n"
    "Usage: kube-rdma-nccl-hook [OPTIONS] < OCI-state-JSON\n"
    "  --container-path=PATH          the nccl.conf mount in the container (default "
    "/etc/nccl.conf)\n"
    "  --addr-family=AF_INET|AF_INET6 the GID family (default AF_INET)\n"
    "  --addr-range=CIDR              only GIDs inside it count\n"
    "  --sysfs-root=DIR, --proc-root=DIR  where GID tables and the namespace's addresses are read\n"
    "                                 (default /sys, /proc)\n"
    "  --log-file=PATH                also append each run's log line to PATH and count its\n"
    "                                 outcome in PATH.counts (the daemons' metrics read it)\n"
    "  --help, --version              print this or the version and exit\n";

struct Options {
  std::string container_path = "/etc/nccl.conf";
  GidSelectionPolicy policy;
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string log_file;
  std::string problem; // a bad argument: nothing is changed
  std::string print;   // --help or --version
};

// By hand, as kube-rdma-memlock-hook's: a bad argument must still let the container start.
Options parseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    const std::string value(eq == std::string_view::npos ? "" : arg.substr(eq + 1));
    if (name == "--container-path" && value.starts_with("/")) {
      o.container_path = value;
    } else if (name == "--addr-family" && (value == "AF_INET" || value == "AF_INET6")) {
      o.policy.family = value == "AF_INET" ? GidFamily::kIPv4 : GidFamily::kIPv6;
    } else if (name == "--addr-range") {
      auto range = parseCidr(value);
      if (range) {
        o.policy.range = *range;
      } else {
        o.problem = "--addr-range: " + range.error().message;
      }
    } else if (name == "--sysfs-root" && !value.empty()) {
      o.sysfs_root = value;
    } else if (name == "--proc-root" && !value.empty()) {
      o.proc_root = value;
    } else if (name == "--log-file") {
      o.log_file = value;
    } else if (arg == "--help" || arg == "-h") {
      o.print = kUsage;
    } else if (arg == "--version") {
      o.print = std::string(kProgram) + " " KUBE_RDMA_VERSION "\n";
    } else {
      o.problem = "bad argument \"" + std::string(arg) + "\"";
    }
  }
  return o;
}

// Opens `path` below `root` component by component without following a symlink, so a path of
// the image cannot lead outside its root filesystem.
Result<int> openInRoot(const std::string& root, const std::string& path) {
  int fd = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return makeError("cannot open the root filesystem " + root + ": " + std::strerror(errno));
  }
  for (size_t start = 1; start < path.size();) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string component = path.substr(start, end - start);
    const int next = component.empty()
                         ? dup(fd)
                         : openat(fd, component.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    const int error = errno;
    close(fd);
    if (next < 0) {
      return makeError("cannot open " + path + " in the container: " + std::strerror(error));
    }
    struct stat st {};
    if (fstat(next, &st) == 0 && S_ISLNK(st.st_mode)) {
      close(next);
      return makeError(path.substr(0, end) + " in the container is a symbolic link, not followed");
    }
    fd = next;
    start = end + 1;
  }
  return fd;
}

// Puts `text` over the container's file at `container_path`, which must be the node's nccl.conf
// (`node_conf`) as the runtime bind-mounted it: a file next to the node's, bind-mounted read-only,
// then unlinked, so nothing is left behind when the container's mount namespace goes.
Status mountOver(const ContainerSpec& spec, const std::string& container_path,
                 const std::string& node_conf, const std::string& text, const std::string& id) {
  auto target = openInRoot(spec.rootfs, container_path);
  if (!target) {
    return target.error();
  }
  struct stat at {};
  struct stat want {};
  const bool same = fstat(*target, &at) == 0 && stat(node_conf.c_str(), &want) == 0 &&
                    S_ISREG(at.st_mode) && at.st_dev == want.st_dev && at.st_ino == want.st_ino;
  const std::string target_fd = "/proc/self/fd/" + std::to_string(*target);
  if (!same) {
    close(*target);
    return makeError(container_path + " in the container is not the node's " + node_conf);
  }
  // The container ID only names the file for whoever looks; only its safe characters are kept.
  std::string name = id.substr(0, 32);
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(c) && c != '-' && c != '_'; },
      '_');
  std::string file =
      node_conf.substr(0, node_conf.rfind('/') + 1) + ".container-" + name + "-XXXXXX";
  const int fd = mkstemp(file.data());
  if (fd < 0) {
    close(*target);
    return makeError("cannot create a file beside " + node_conf + ": " + std::strerror(errno));
  }
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       fchmod(fd, 0444) == 0;
  const int write_error = errno;
  close(fd);
  Status result = Ok{};
  const std::string in_root = spec.rootfs + container_path;
  if (!written) {
    result = makeError("cannot write " + file + ": " + std::strerror(write_error));
  } else if (mount(file.c_str(), target_fd.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    result = makeError("cannot bind-mount over " + container_path + ": " + std::strerror(errno));
  } else if (mount(nullptr, in_root.c_str(), nullptr,
                   MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0) {
    result = makeError("cannot make " + container_path + " read-only: " + std::strerror(errno));
    umount2(in_root.c_str(), MNT_DETACH);
  }
  unlink(file.c_str());
  close(*target);
  return result;
}

std::string portIndexes(const ContainerNcclConf& resolved) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < resolved.ports.size(); ++i) {
    const auto& index = resolved.choice.port_indexes[i];
    parts.push_back(resolved.ports[i].device + ":" + std::to_string(resolved.ports[i].port) + "=" +
                    (index ? std::to_string(*index) : "none"));
  }
  return joinStrings(parts, ",");
}

NcclHookOutcome resolve(Logger& log, const Options& options, const OciState& state) {
  const std::string config_path = state.bundle + "/config.json";
  auto config_text = readAttribute(config_path, kMaxConfigFileBytes);
  if (!config_text) {
    log.error("cannot read the container's OCI spec, nccl.conf left as the node wrote it",
              {{"container", state.id}, {"error", config_text.error().message}});
    return NcclHookOutcome::kError;
  }
  auto spec = parseContainerSpec(*config_text, state.bundle);
  if (!spec) {
    log.error("bad OCI spec, nccl.conf left as the node wrote it",
              {{"container", state.id}, {"path", config_path}, {"error", spec.error().message}});
    return NcclHookOutcome::kError;
  }
  const LogField pod{"pod", spec->pod};
  if (!spec->own_network_namespace) {
    log.info("host network: the node's NCCL settings are the container's",
             {pod, {"container", state.id}});
    return NcclHookOutcome::kHostNetwork;
  }
  if (auto set = envValue(spec->env, "NCCL_IB_GID_INDEX")) {
    log.info("NCCL_IB_GID_INDEX is set in the container's environment, which NCCL prefers to "
             "nccl.conf: left alone",
             {pod, {"container", state.id}, {"value", *set}});
    return NcclHookOutcome::kUserSet;
  }
  // The common case, a pod on the cluster network alone, without reading a GID table.
  if (auto links = listNetnsLinks(); links && !mayHoldGids(*links)) {
    log.info("only loopback and veth interfaces, no GID of the container's own: the node's NCCL "
             "settings stay",
             {pod, {"container", state.id}, {"outcome", toString(GidChoice::Outcome::kNoOwnGid)}});
    return NcclHookOutcome::kNoOwnGid;
  }
  std::string node_conf;
  for (const auto& [destination, source] : spec->mounts) {
    node_conf = destination == options.container_path ? source : node_conf;
  }
  if (node_conf.empty()) {
    log.warn("the container has no nccl.conf mount: nothing to resolve",
             {pod, {"container", state.id}, {"container_path", options.container_path}});
    return NcclHookOutcome::kNoNcclConf;
  }
  auto conf_text = readAttribute(node_conf, kMaxConfigFileBytes);
  if (!conf_text) {
    log.error("cannot read the node's nccl.conf, left as it is",
              {pod, {"container", state.id}, {"error", conf_text.error().message}});
    return NcclHookOutcome::kError;
  }
  const NcclEnv node_settings = parseNcclConf(*conf_text);
  // Only the granted ports, each table read up to the container's own entry.
  const NodeTopology topology =
      discoverPorts({options.sysfs_root, options.proc_root}, hcaPortsOf(node_settings),
                    {GidTables::kUntilSelected, {options.policy}});
  auto resolved = resolveContainerNcclConf(node_settings, topology, options.policy);
  if (!resolved) {
    log.error("cannot resolve the container's GID index, nccl.conf left as the node wrote it",
              {pod, {"container", state.id}, {"error", resolved.error().message}});
    return NcclHookOutcome::kError;
  }
  if (!resolved->own_gid_index) {
    // A veth-only pod has no GID of its own: the host's (hostNetwork, bridge CNI) stays right.
    const auto outcome = resolved->choice.outcome;
    log.log(outcome == GidChoice::Outcome::kPortsDisagree ? LogLevel::kWarn : LogLevel::kInfo,
            "no single GID index of the container's namespace: the node's NCCL settings stay",
            {pod,
             {"container", state.id},
             {"outcome", toString(outcome)},
             {"ports", portIndexes(*resolved)}});
    return outcome == GidChoice::Outcome::kPortsDisagree ? NcclHookOutcome::kPortsDisagree
           : outcome == GidChoice::Outcome::kNoRocePort  ? NcclHookOutcome::kNoRocePort
                                                         : NcclHookOutcome::kNoOwnGid;
  }
  auto text = renderNcclConf(resolved->settings);
  Status mounted = text ? mountOver(*spec, options.container_path, node_conf, *text, state.id)
                        : Status(text.error());
  if (!mounted) {
    log.error("cannot give the container its own nccl.conf, the node's stays",
              {pod, {"container", state.id}, {"error", mounted.error().message}});
    return NcclHookOutcome::kError;
  }
  log.info("the container's own GID index", {pod,
                                             {"container", state.id},
                                             {"gid_index", std::to_string(*resolved->choice.index)},
                                             {"ports", portIndexes(*resolved)}});
  return NcclHookOutcome::kOwnGidIndex;
}

void run(int argc, char** argv) {
  const Options options = parseArgs(argc, argv);
  if (!options.print.empty()) {
    (void)!write(STDOUT_FILENO, options.print.data(), options.print.size());
    return;
  }
  std::ostringstream line;
  Logger log(line);
  const auto state = readHookInput(log, options.problem, "nccl.conf left as the node wrote it");
  NcclHookOutcome outcome = NcclHookOutcome::kError;
  if (state && state->bundle.empty()) {
    log.error("the OCI state has no bundle, nccl.conf left as the node wrote it",
              {{"container", state->id}});
  } else if (state) {
    outcome = resolve(log, options, *state);
  }
  if (!options.log_file.empty()) {
    if (auto counted = countHookOutcome(hookCountsPath(options.log_file), outcome); !counted) {
      log.warn("cannot count the container in the hook's metrics",
               {{"error", counted.error().message}});
    }
  }
  reportHookRun(line.str(), options.log_file, kProgram);
}

// Past the deadline the container starts with the node's nccl.conf, untouched (the bind mount
// is the last step, and a half-done one is undone before it returns).
void onDeadline(int /*signal*/) {
  constexpr char kMessage[] = "kube-rdma-nccl-hook: deadline of 2 s passed, nccl.conf left as "
                              "the node wrote it\n";
  (void)!write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  _exit(0);
}

} // namespace
} // namespace kube_rdma

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGALRM, kube_rdma::onDeadline);
  alarm(kube_rdma::kDeadlineSeconds);
  try {
    kube_rdma::run(argc, argv);
  } catch (...) {
    // Out of memory at worst; the container starts with the node's nccl.conf.
  }
  return 0;
}
