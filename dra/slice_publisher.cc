#include "dra/slice_publisher.h"

#include <algorithm>

#include "dra/resource_slice.h"
#include "kubeclient/api_paths.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

int64_t poolGeneration(const json& slice) {
  const json* generation = &slice;
  for (const char* key : {"spec", "pool", "generation"}) {
    if (!generation->is_object() || !generation->contains(key)) {
      return 0;
    }
    generation = &(*generation)[key];
  }
  return generation->is_number_integer() ? generation->get<int64_t>() : 0;
}

json specWithoutGeneration(const json& slice) {
  json spec = slice.value("spec", json::object());
  if (spec.contains("pool") && spec["pool"].is_object()) {
    spec["pool"].erase("generation");
  }
  return spec;
}

std::string sliceName(const json& slice) {
  return slice.value("metadata", json::object()).value("name", "");
}

} // namespace

SliceChanges planSliceChanges(const std::vector<nlohmann::ordered_json>& wanted,
                              const std::vector<json>& listed, int64_t last_generation) {
  std::vector<json> sorted = listed;
  std::sort(sorted.begin(), sorted.end(),
            [](const json& a, const json& b) { return sliceName(a) < sliceName(b); });
  std::vector<json> wanted_plain;
  wanted_plain.reserve(wanted.size());
  for (const nlohmann::ordered_json& slice : wanted) {
    wanted_plain.push_back(json::parse(slice.dump()));
  }
  const size_t kept = std::min(wanted_plain.size(), sorted.size());
  bool changed = sorted.size() < wanted_plain.size();
  int64_t highest = last_generation;
  for (const json& slice : sorted) {
    highest = std::max(highest, poolGeneration(slice));
  }
  for (size_t i = 0; i < kept && !changed; ++i) {
    changed = specWithoutGeneration(sorted[i]) != specWithoutGeneration(wanted_plain[i]) ||
              poolGeneration(sorted[i]) != poolGeneration(sorted[0]);
  }

  SliceChanges changes;
  changes.generation = changed || kept == 0 ? highest + 1 : poolGeneration(sorted[0]);
  if (changed) {
    for (size_t i = 0; i < wanted_plain.size(); ++i) {
      json spec = wanted_plain[i]["spec"];
      spec["pool"]["generation"] = changes.generation;
      if (i < kept) {
        json slice = sorted[i];
        slice["spec"] = std::move(spec);
        changes.update.push_back(std::move(slice));
      } else {
        json slice = wanted_plain[i];
        slice["spec"] = std::move(spec);
        changes.create.push_back(std::move(slice));
      }
    }
  }
  for (size_t i = kept; i < sorted.size(); ++i) {
    changes.remove.push_back(sliceName(sorted[i]));
  }
  return changes;
}

SlicePublisher::SlicePublisher(ApiClient& api, std::string node_name, PluginConfig config,
                               Logger& logger, DraMetrics& metrics, const Clock& clock,
                               SlicePublisherOptions options)
    : api_(api), node_name_(std::move(node_name)), config_(std::move(config)), logger_(logger),
      metrics_(metrics), clock_(clock), options_(options) {}

void SlicePublisher::start(NodeTopology topology) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    topology_ = std::move(topology);
  }
  thread_ = std::thread([this] { run(); });
}

void SlicePublisher::set(NodeTopology topology) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (topology_ == topology) {
    return;
  }
  topology_ = std::move(topology);
  changed_ = true;
  wake_.notify_all();
}

void SlicePublisher::stop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

int64_t SlicePublisher::generation() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

PublishingState SlicePublisher::state() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

void SlicePublisher::run() {
  int failures = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    const NodeTopology topology = *topology_;
    changed_ = false;
    lock.unlock();
    const Result<bool> done = reconcile(topology);
    if (!done.ok() || *done) {
      metrics_.recordPublication(done.ok());
    }
    lock.lock();
    std::chrono::milliseconds wait = options_.resync;
    if (done.ok()) {
      failures = 0;
      state_ = PublishingState{clock_.now(), ""};
    } else {
      state_.last_error = done.error().message;
      wait = backoffDelay(options_.backoff, failures++);
      logger_.warn(
          "publishing the ResourceSlices failed; retrying",
          {{"error", done.error().message}, {"retry_in_ms", std::to_string(wait.count())}});
    }
    wake_.wait_for(lock, wait, [this] { return stopping_ || changed_; });
  }
}

Result<bool> SlicePublisher::reconcile(const NodeTopology& topology) {
  if (node_uid_.empty()) {
    Result<std::string> node_path = objectPath(kNodes, "", node_name_);
    if (!node_path.ok()) {
      return node_path.error();
    }
    ApiResult<json> node = api_.get(*node_path);
    if (!node.ok()) {
      return makeError("reading Node " + node_name_ + ": " + describe(node.error()));
    }
    node_uid_ = node->value("metadata", json::object()).value("uid", "");
    if (node_uid_.empty()) {
      return makeError("Node " + node_name_ + " has no metadata.uid");
    }
  }
  const Result<std::string> collection = collectionPath(kResourceSlices, "");
  if (!collection.ok()) {
    return collection.error();
  }
  const SliceSet wanted = resourceSlicesFor(topology, config_, {node_name_, node_uid_}, 0);
  ApiResult<ObjectList> listed =
      api_.list(*collection, {"", "spec.nodeName=" + node_name_ +
                                      ",spec.driver=" + std::string(kDraDriverName)});
  if (!listed.ok()) {
    return makeError("listing ResourceSlices: " + describe(listed.error()));
  }
  const int64_t last_generation = generation();
  const SliceChanges changes = planSliceChanges(wanted.slices, listed->items, last_generation);
  for (const std::string& name : changes.remove) {
    ApiResult<json> removed = api_.remove(*collection + "/" + name);
    if (!removed.ok() && removed.error().code != 404) {
      return makeError("deleting ResourceSlice " + name + ": " + describe(removed.error()));
    }
    logger_.info("deleted an extra ResourceSlice", {{"slice", name}});
  }
  for (const json& slice : changes.update) {
    const std::string name = slice["metadata"].value("name", "");
    ApiResult<json> updated =
        api_.updateWithRetry(*collection + "/" + name, [&](json& object) -> Status {
          object["spec"] = slice["spec"];
          return Ok{};
        });
    if (!updated.ok()) {
      return makeError("updating ResourceSlice " + name + ": " + describe(updated.error()));
    }
  }
  for (const json& slice : changes.create) {
    ApiResult<json> created = api_.create(*collection, slice);
    if (!created.ok()) {
      return makeError("creating a ResourceSlice: " + describe(created.error()));
    }
  }
  if (!changes.create.empty() || !changes.update.empty()) {
    for (const std::string& warning : wanted.warnings) {
      logger_.warn(warning);
    }
    logger_.info("published the ResourceSlices",
                 {{"generation", std::to_string(changes.generation)},
                  {"created", std::to_string(changes.create.size())},
                  {"updated", std::to_string(changes.update.size())}});
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  generation_ = changes.generation;
  return !changes.empty();
}

} // namespace kube_rdma
