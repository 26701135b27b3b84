#include "common/pools/hook_outcomes.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "common/util/strings.h"

namespace kube_rdma {
namespace {

constexpr size_t kMaxCountsBytes = 4096;

// Holds the descriptor and its flock until destroyed (close() drops the lock).
class LockedFile {
public:
  LockedFile(const std::string& path, int flags, int lock) {
    fd_ = open(path.c_str(), flags | O_CLOEXEC, 0644);
    if (fd_ >= 0 && flock(fd_, lock) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~LockedFile() {
    if (fd_ >= 0) {
      close(fd_);
    }
  }
  LockedFile(const LockedFile&) = delete;
  LockedFile& operator=(const LockedFile&) = delete;
  int fd() const { return fd_; }

  Result<std::string> readAll() const {
    std::string text(kMaxCountsBytes, '\0');
    const ssize_t got = pread(fd_, text.data(), text.size(), 0);
    if (got < 0) {
      return makeError(std::strerror(errno));
    }
    text.resize(static_cast<size_t>(got));
    return text;
  }

private:
  int fd_ = -1;
};

} // namespace

std::string_view toString(NcclHookOutcome outcome) {
  return kNcclHookOutcomeNames[static_cast<size_t>(outcome)];
}

std::string hookCountsPath(const std::string& log_file) {
  return log_file + ".counts";
}

Result<HookOutcomeCounts> parseHookOutcomeCounts(std::string_view text) {
  HookOutcomeCounts counts;
  std::istringstream lines{std::string(text)};
  size_t number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    std::istringstream fields(line);
    std::string outcome;
    std::string count_text;
    std::string extra;
    if (!(fields >> outcome)) {
      continue; // a blank line
    }
    fields >> count_text >> extra;
    const auto count = extra.empty() ? parseWhole<uint64_t>(count_text) : std::nullopt;
    if (!count) {
      return makeError("line " + std::to_string(number) +
                       " is not \"OUTCOME COUNT\": " + quoted(line));
    }
    counts[outcome] = *count;
  }
  return counts;
}

std::string renderHookOutcomeCounts(const HookOutcomeCounts& counts) {
  std::string text;
  for (const auto& [outcome, count] : counts) {
    text += outcome + " " + std::to_string(count) + "\n";
  }
  return text;
}

Status countHookOutcome(const std::string& path, NcclHookOutcome outcome) {
  const LockedFile file(path, O_RDWR | O_CREAT, LOCK_EX);
  if (file.fd() < 0) {
    return makeError("cannot open and lock " + path + ": " + std::strerror(errno));
  }
  auto text = file.readAll();
  if (!text) {
    return makeError("cannot read " + path + ": " + text.error().message);
  }
  auto counts = parseHookOutcomeCounts(*text);
  std::string restarted;
  if (!counts) {
    restarted = path + " " + counts.error().message + ", counting from 0 again";
    counts = HookOutcomeCounts{};
  }
  ++(*counts)[std::string(toString(outcome))];
  const std::string out = renderHookOutcomeCounts(*counts);
  // Rewritten whole under the exclusive lock: a daemon reads under a shared one, so it never sees
  // the file half written.
  if (ftruncate(file.fd(), 0) != 0 ||
      pwrite(file.fd(), out.data(), out.size(), 0) != static_cast<ssize_t>(out.size())) {
    return makeError("cannot write " + path + ": " + std::strerror(errno));
  }
  if (!restarted.empty()) {
    return makeError(restarted);
  }
  return Ok{};
}

Result<ScrapedFamily> hookOutcomeFamily(const std::string& path) {
  ScrapedFamily family{"kube_rdma_nccl_hook_containers_total",
                       "Containers kube-rdma-nccl-hook resolved, by outcome.",
                       MetricType::kCounter,
                       {}};
  HookOutcomeCounts counts;
  const LockedFile file(path, O_RDONLY, LOCK_SH);
  if (file.fd() < 0 && errno != ENOENT) {
    return makeError("cannot read the hook's counts " + path + ": " + std::strerror(errno));
  }
  if (file.fd() >= 0) {
    auto text = file.readAll();
    auto parsed = text ? parseHookOutcomeCounts(*text) : Result<HookOutcomeCounts>(text.error());
    if (!parsed) {
      return makeError("cannot read the hook's counts " + path + ": " + parsed.error().message);
    }
    counts = std::move(*parsed);
  }
  for (const auto name : kNcclHookOutcomeNames) {
    counts.try_emplace(std::string(name), 0);
  }
  for (const auto& [outcome, count] : counts) {
    family.samples.push_back({{{"outcome", outcome}}, static_cast<double>(count)});
  }
  return family;
}

std::vector<ScrapedFamily> scrapeHookOutcomes(const NcclHookConfig& hook, Logger& log) {
  if (!hook.enabled) {
    return {};
  }
  auto family = hookOutcomeFamily(hookCountsPath(hook.log_file));
  if (!family) {
    log.warn("kube_rdma_nccl_hook_containers_total left out", {{"error", family.error().message}});
    return {};
  }
  return {std::move(*family)};
}

} // namespace kube_rdma
