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
// the log file, naming the pod, and counts its outcome beside it (common/pools/hook_outcomes.h).

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

#include "common/pools/container_nccl.h"
#include "common/node/gid_selection.h"
#include "common/pools/hook_outcomes.h"
#include "common/util/log.h"
#include "common/node/netns_links.h"
#include "common/pools/oci_hook.h"
#include "common/util/strings.h"
#include "common/node/sysfs_attributes.h"
#include "common/node/sysfs_discovery.h"

namespace kube_rdma {
namespace {

constexpr unsigned kDeadlineSeconds = kDefaultNcclHookDeadlineSeconds;
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
    "                                 (default /sys, /proc); in the kernel's exclusive RDMA\n"
    "                                 netns mode the tables are the container's own /sys's\n"
    "  --deadline-seconds=N           give up after N seconds (1-60, default 2), leaving the\n"
    "                                 node's nccl.conf\n"
    "  --log-file=PATH                also append each run's log line to PATH and count its\n"
    "                                 outcome in PATH.counts (the daemons' metrics read it)\n"
    "  --help, --version              print this or the version and exit\n";

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

NcclHookOutcome resolve(Logger& log, const NcclHookArgs& options, const OciState& state) {
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
  ContainerGidInputs inputs{
      state.id, options.container_path, {options.sysfs_root, options.proc_root}, options.policy};
  // The common case, a pod on the cluster network alone, without reading a GID table.
  auto links = listNetnsLinks();
  inputs.cluster_network_only = links && !mayHoldGids(*links);
  inputs.exclusive_rdma_netns = rdmaNetnsIsExclusive(options.sysfs_root);
  ContainerGidDecision decision = decideContainerGid(*spec, inputs);
  if (decision.outcome == NcclHookOutcome::kOwnGidIndex) {
    auto text = renderNcclConf(decision.resolved->settings);
    Status mounted =
        text ? mountOver(*spec, options.container_path, decision.node_conf, *text, state.id)
             : Status(text.error());
    if (!mounted) {
      log.error("cannot give the container its own nccl.conf, the node's stays",
                {{"pod", spec->pod}, {"container", state.id}, {"error", mounted.error().message}});
      return NcclHookOutcome::kError;
    }
  }
  log.log(decision.level, decision.message, decision.fields);
  return decision.outcome;
}

void run(int argc, char** argv) {
  const NcclHookArgs options = parseNcclHookArgs({argv + 1, argv + argc});
  alarm(options.deadline_seconds); // replaces main's, which covered the parsing
  if (options.help || options.version) {
    const std::string text =
        options.help ? kUsage : std::string(kProgram) + " " KUBE_RDMA_VERSION "\n";
    (void)!write(STDOUT_FILENO, text.data(), text.size());
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
  constexpr char kMessage[] = "kube-rdma-nccl-hook: deadline passed (--deadline-seconds, default "
                              "2), nccl.conf left as the node wrote it\n";
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
