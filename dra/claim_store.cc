#include "dra/claim_store.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/util/atomic_file.h"
#include "common/util/strings.h"
#include "kubeclient/kubeconfig.h"

namespace kube_rdma {
namespace {

constexpr int kCheckpointVersion = 1;

Result<std::map<std::string, std::vector<std::string>>> readCheckpoint(const std::string& path) {
  Result<std::string> text = readWholeFile(path);
  if (!text) {
    return std::map<std::string, std::vector<std::string>>{};
  }
  const auto doc = nlohmann::json::parse(*text, nullptr, false);
  const auto bad = [&path](const std::string& why) {
    return makeError("checkpoint " + path + " is damaged: " + why);
  };
  if (!doc.is_object() || !doc.contains("claims") || !doc["claims"].is_object()) {
    return bad("expected an object with \"claims\"");
  }
  if (doc.value("version", 0) != kCheckpointVersion) {
    return bad("unknown version");
  }
  std::map<std::string, std::vector<std::string>> files;
  for (const auto& [uid, entry] : doc["claims"].items()) {
    if (!entry.is_object() || !entry.contains("files") || !entry["files"].is_array()) {
      return bad("claim " + uid + " has no \"files\" list");
    }
    for (const auto& file : entry["files"]) {
      if (!file.is_string()) {
        return bad("claim " + uid + " has a file that is not a string");
      }
      files[uid].push_back(file.get<std::string>());
    }
  }
  return files;
}

Status removeAll(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    if (auto status = removeFileIfPresent(path); !status.ok()) {
      return status;
    }
  }
  return Ok{};
}

} // namespace

Result<std::unique_ptr<ClaimStore>> ClaimStore::open(const std::string& state_dir) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    return makeError("cannot create state directory " + state_dir + ": " + ec.message());
  }
  std::unique_ptr<ClaimStore> store(new ClaimStore(state_dir));
  auto files = readCheckpoint(store->checkpointPath());
  if (!files.ok()) {
    return files.error();
  }
  store->files_ = std::move(*files);
  return store;
}

Status ClaimStore::prepare(const std::string& uid, const PreparedClaim& claim) {
  std::lock_guard lock(mutex_);
  // Recorded first: a crash half-way leaves files the next unprepare knows about.
  std::vector<std::string>& recorded = files_[uid];
  for (const auto& file : claim.files) {
    if (!listContains(recorded, file.path)) {
      recorded.push_back(file.path);
    }
  }
  Status status = saveLocked();
  for (size_t i = 0; status.ok() && i < claim.files.size(); ++i) {
    status = writeFileAtomically(claim.files[i].path, claim.files[i].content);
  }
  if (status.ok()) {
    return Ok{};
  }
  // Nothing left behind for a claim that failed.
  (void)removeAll(files_[uid]);
  files_.erase(uid);
  (void)saveLocked();
  return status;
}

Status ClaimStore::unprepare(const std::string& uid) {
  std::lock_guard lock(mutex_);
  const auto it = files_.find(uid);
  if (it == files_.end()) {
    return Ok{};
  }
  if (auto status = removeAll(it->second); !status.ok()) {
    return status;
  }
  files_.erase(it);
  return saveLocked();
}

std::vector<std::string> ClaimStore::preparedClaims() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> uids;
  for (const auto& [uid, files] : files_) {
    uids.push_back(uid);
  }
  return uids;
}

Status ClaimStore::saveLocked() const {
  nlohmann::json claims = nlohmann::json::object();
  for (const auto& [uid, files] : files_) {
    claims[uid] = {{"files", files}};
  }
  const nlohmann::json doc = {{"version", kCheckpointVersion}, {"claims", std::move(claims)}};
  return writeFileAtomically(checkpointPath(), doc.dump(2) + "\n");
}

} // namespace kube_rdma
