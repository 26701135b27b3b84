#include "common/pools/oci_hook.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/util/json_depth.h"
#include "common/util/log.h"

namespace kube_rdma {
namespace {

constexpr size_t kMaxStateBytes = 1 << 20; // a runtime's state is a few KiB
constexpr off_t kMaxLogBytes = 1 << 20;    // then the log moves to PATH.1, replacing it
constexpr auto kStdinTimeout = std::chrono::seconds(2);
// An OCI spec is a few levels deep; anything deeper is not one, and is not built.
constexpr int kMaxDocumentDepth = 16;

Result<nlohmann::json> parseObject(std::string_view text, const char* what) {
  if (jsonNestsDeeperThan(text, kMaxDocumentDepth)) {
    return makeError(std::string(what) + " nests deeper than " + std::to_string(kMaxDocumentDepth) +
                     " levels");
  }
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return makeError(std::string(what) + " is not JSON");
  }
  if (!doc.is_object()) {
    return makeError(std::string(what) + " is not a JSON object");
  }
  return doc;
}

std::string stringMember(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// All of stdin, which the runtime closes after writing the state. An error when it is larger than
// 1 MiB or still open after 2 s (not run by a runtime).
Result<std::string> readHookState() {
  const auto deadline = std::chrono::steady_clock::now() + kStdinTimeout;
  std::string text;
  char buffer[65536];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd in{STDIN_FILENO, POLLIN, 0};
    const int ready = poll(&in, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      return makeError(ready == 0 ? "stdin was not closed within 2 s"
                                  : std::string("cannot wait for stdin: ") + std::strerror(errno));
    }
    const ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return makeError(std::string("cannot read stdin: ") + std::strerror(errno));
    }
    if (n == 0) {
      return text;
    }
    if (text.size() + static_cast<size_t>(n) > kMaxStateBytes) {
      return makeError("the OCI state is larger than 1 MiB");
    }
    text.append(buffer, static_cast<size_t>(n));
  }
}

} // namespace

Result<OciState> parseOciState(std::string_view state_json) {
  auto doc = parseObject(state_json, "the OCI state");
  if (!doc) {
    return doc.error();
  }
  const auto pid = doc->find("pid");
  if (pid == doc->end()) {
    return makeError("the OCI state has no pid");
  }
  if (!pid->is_number_integer()) {
    return makeError(std::string("the OCI state's pid is of type ") + pid->type_name() +
                     ", not an integer");
  }
  const int64_t value = pid->get<int64_t>(); // an unsigned above INT64_MAX comes out negative
  if (value <= 0 || value > std::numeric_limits<pid_t>::max()) {
    return makeError("the OCI state's pid " + pid->dump() + " is not a process ID");
  }
  OciState state;
  state.pid = static_cast<pid_t>(value);
  state.id = stringMember(*doc, "id");
  state.bundle = stringMember(*doc, "bundle");
  return state;
}

std::optional<OciState> readHookInput(Logger& log, const std::string& problem,
                                      const std::string& unchanged) {
  if (!problem.empty()) {
    log.error("bad argument, " + unchanged, {{"error", problem}});
    return std::nullopt;
  }
  auto text = readHookState();
  if (!text) {
    log.error("no OCI state, " + unchanged, {{"error", text.error().message}});
    return std::nullopt;
  }
  auto state = parseOciState(*text);
  if (!state) {
    log.error("bad OCI state, " + unchanged, {{"error", state.error().message}});
    return std::nullopt;
  }
  return std::move(*state);
}

void reportHookRun(const std::string& text, const std::string& path, const char* program) {
  (void)!write(STDERR_FILENO, text.data(), text.size());
  if (path.empty()) {
    return;
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && st.st_size >= kMaxLogBytes) {
    std::rename(path.c_str(), (path + ".1").c_str());
  }
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    const std::string message =
        std::string(program) + ": cannot write " + path + ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, message.data(), message.size());
  }
  if (fd >= 0) {
    close(fd);
  }
}

Result<ContainerSpec> parseContainerSpec(std::string_view config_json, const std::string& bundle) {
  auto doc = parseObject(config_json, "the OCI spec");
  if (!doc) {
    return doc.error();
  }
  ContainerSpec spec;
  const auto root = doc->find("root");
  if (root == doc->end() || !root->is_object() || stringMember(*root, "path").empty()) {
    return makeError("the OCI spec has no root.path");
  }
  spec.rootfs = stringMember(*root, "path");
  if (spec.rootfs.front() != '/') {
    spec.rootfs = bundle + "/" + spec.rootfs;
  }
  if (const auto process = doc->find("process"); process != doc->end() && process->is_object()) {
    if (const auto env = process->find("env"); env != process->end() && env->is_array()) {
      for (const auto& entry : *env) {
        if (entry.is_string()) {
          spec.env.push_back(entry.get<std::string>());
        }
      }
    }
  }
  if (const auto linux_section = doc->find("linux");
      linux_section != doc->end() && linux_section->is_object()) {
    if (const auto namespaces = linux_section->find("namespaces");
        namespaces != linux_section->end() && namespaces->is_array()) {
      spec.own_network_namespace =
          std::any_of(namespaces->begin(), namespaces->end(), [](const nlohmann::json& ns) {
            return ns.is_object() && stringMember(ns, "type") == "network";
          });
    }
  }
  if (const auto mounts = doc->find("mounts"); mounts != doc->end() && mounts->is_array()) {
    for (const auto& mount : *mounts) {
      if (mount.is_object()) {
        spec.mounts.emplace_back(stringMember(mount, "destination"), stringMember(mount, "source"));
      }
    }
  }
  if (const auto annotations = doc->find("annotations");
      annotations != doc->end() && annotations->is_object()) {
    // containerd's CRI plugin names the pod one way, CRI-O another.
    for (const auto& [namespace_key, name_key] :
         {std::pair{"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name"},
          std::pair{"io.kubernetes.pod.namespace", "io.kubernetes.pod.name"}}) {
      const std::string pod_namespace = stringMember(*annotations, namespace_key);
      const std::string pod_name = stringMember(*annotations, name_key);
      if (!pod_namespace.empty() && !pod_name.empty()) {
        spec.pod = pod_namespace + "/" + pod_name;
        break;
      }
    }
    spec.nri_gid_index = stringMember(*annotations, kNriGidIndexAnnotation);
  }
  return spec;
}

std::optional<std::string> envValue(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& entry : env) {
    if (entry.size() > name.size() && entry[name.size()] == '=' && entry.starts_with(name)) {
      return entry.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

} // namespace kube_rdma
