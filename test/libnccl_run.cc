#include "test/libnccl_run.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h> // environ (declared under _GNU_SOURCE, which g++ and clang++ define)

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;

constexpr int kNoNccl = 77;

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What the child loads: the file KUBE_RDMA_LIBNCCL names, else the soname.
std::string libncclPath() {
  const char* path = getenv(kLibncclVariable);
  return path != nullptr && *path != '\0' ? path : "libnccl.so.2";
}

// The child, when the library cannot be loaded or is not NCCL: writes why.
[[noreturn]] void exitNotLoaded(const fs::path& result, const std::string& why) {
  std::ofstream(result) << nlohmann::json{{"load_error", why}}.dump();
  _exit(kNoNccl);
}

// The child: never returns.
[[noreturn]] void runInChild(const fs::path& conf, const fs::path& log, const fs::path& result,
                             const NcclEnv& env, const std::vector<std::string>& names) {
  alarm(60); // a hung NCCL must not hang the caller
  std::vector<std::string> inherited;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("NCCL_", 0) == 0) {
      inherited.push_back(entry.substr(0, entry.find('=')));
    }
  }
  for (const auto& name : inherited) {
    unsetenv(name.c_str());
  }
  setenv("NCCL_CONF_FILE", conf.c_str(), 1);
  setenv("NCCL_DEBUG_FILE", log.c_str(), 1);
  for (const auto& [name, value] : env) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  const std::string library = libncclPath();
  void* nccl = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (nccl == nullptr) {
    const char* error = dlerror();
    exitNotLoaded(result, error != nullptr ? error : library + ": dlopen failed");
  }
  using GetVersion = int (*)(int*);
  using GetUniqueId = int (*)(void*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(nccl, "ncclGetVersion"));
  auto get_unique_id = reinterpret_cast<GetUniqueId>(dlsym(nccl, "ncclGetUniqueId"));
  if (get_version == nullptr || get_unique_id == nullptr) {
    exitNotLoaded(result, library + " has no ncclGetVersion or ncclGetUniqueId");
  }
  nlohmann::json out;
  int version = 0;
  get_version(&version);
  char unique_id[128] = {}; // sizeof(ncclUniqueId)
  out["result"] = get_unique_id(unique_id);
  out["version"] = version;
  for (const auto& name : names) {
    const char* value = getenv(name.c_str());
    out["env"][name] = value == nullptr ? nlohmann::json() : nlohmann::json(value);
  }
  std::ofstream(result) << out.dump();
  _exit(0);
}

} // namespace

Result<NcclRun> runNcclGetUniqueId(const fs::path& work_dir, const fs::path& conf,
                                   const NcclEnv& env, const std::vector<std::string>& names) {
  const fs::path log = work_dir / "nccl.log";
  const fs::path result = work_dir / "result.json";
  fs::remove(log);
  fs::remove(result);
  const pid_t pid = fork();
  if (pid < 0) {
    return makeError("fork failed");
  }
  if (pid == 0) {
    runInChild(conf, log, result, env, names);
  }
  NcclRun run;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) {
    return makeError("waitpid failed for the NCCL child");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == kNoNccl) {
    const auto out = nlohmann::json::parse(readFile(result), nullptr, false);
    run.load_error = out.is_object() ? out.value("load_error", "") : "";
    if (run.load_error.empty()) {
      run.load_error = libncclPath() + " could not be loaded";
    }
    return run;
  }
  run.nccl_found = true;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return makeError("the NCCL child ended with status " + std::to_string(status) + "; its log:\n" +
                     readFile(log));
  }
  const auto out = nlohmann::json::parse(readFile(result), nullptr, false);
  if (!out.is_object()) {
    return makeError("the NCCL child wrote no result");
  }
  run.unique_id_result = out["result"].get<int>();
  run.version = out["version"].get<int>();
  run.log = readFile(log);
  if (out.contains("env")) {
    for (const auto& [name, value] : out["env"].items()) {
      run.env[name] =
          value.is_null() ? std::nullopt : std::optional<std::string>(value.get<std::string>());
    }
  }
  return run;
}

} // namespace kube_rdma
