#include "dra/slice_publisher.h"

#include <algorithm>
#include <random>

#include "common/util/json_members.h"
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

// Calls f(device, taint) for every taint of every device of a slice's spec.
template <typename Spec, typename F> void forEachTaint(Spec& spec, F f) {
  if (!spec.contains("devices") || !spec["devices"].is_array()) {
    return;
  }
  for (auto& device : spec["devices"]) {
    if (device.is_object() && device.contains("taints") && device["taints"].is_array()) {
      for (auto& taint : device["taints"]) {
        f(device, taint);
      }
    }
  }
}

// The spec as far as it is ours: without pool.generation, and without the taints' timeAdded,
// which the API server stamps.
json comparableSpec(const json& slice) {
  json spec = slice.value("spec", json::object());
  if (spec.contains("pool") && spec["pool"].is_object()) {
    spec["pool"].erase("generation");
  }
  forEachTaint(spec, [](json&, json& taint) {
    if (taint.is_object()) {
      taint.erase("timeAdded");
    }
  });
  return spec;
}

// A taint that stays keeps the time it was added, the one the API server stamped.
void keepTaintTimes(json& spec, const json& listed_spec) {
  forEachTaint(spec, [&](json& device, json& taint) {
    forEachTaint(listed_spec, [&](const json& old_device, const json& old_taint) {
      if (old_device.value("name", "") == device.value("name", "") &&
          old_taint.contains("timeAdded") && old_taint.value("key", "") == taint.value("key", "") &&
          old_taint.value("value", "") == taint.value("value", "") &&
          old_taint.value("effect", "") == taint.value("effect", "")) {
        taint["timeAdded"] = old_taint["timeAdded"];
      }
    });
  });
}

// The device fields of features an API server may not have: each is stored only where the
// server has the feature (1.37 has both); elsewhere it drops them from what it stores.
struct OptionalFeature {
  const char* name;
  const char* field; // whose absence after a write shows the server dropped the feature
  void (*drop)(nlohmann::ordered_json& device); // what the server drops, so the driver does too
};

const std::vector<OptionalFeature>& optionalFeatures() {
  static const std::vector<OptionalFeature> features = {
      {"device taints (1.37, or the gate DRADeviceTaints from 1.33)", "taints",
       [](nlohmann::ordered_json& device) { device.erase("taints"); }},
      {"consumable capacity (1.37, or the gate DRAConsumableCapacity from 1.34)",
       "allowMultipleAllocations", [](nlohmann::ordered_json& device) {
         device.erase("allowMultipleAllocations");
         if (device.contains("capacity")) {
           for (auto& [name, capacity] : device["capacity"].items()) {
             capacity.erase("requestPolicy");
           }
         }
       }}};
  return features;
}

bool anyDeviceHas(const json& slice, const char* field) {
  const json* spec = jsonMember(slice, "spec");
  const json* devices = spec != nullptr ? jsonMember(*spec, "devices") : nullptr;
  return devices != nullptr && devices->is_array() &&
         std::any_of(devices->begin(), devices->end(),
                     [&](const json& device) { return jsonMember(device, field) != nullptr; });
}

std::string sliceCollection() {
  // Cluster-scoped: no namespace that could make the path invalid.
  return *collectionPath(kResourceSlices, "");
}

InformerOptions watchOptions(InformerOptions options, const std::string& node_name) {
  options.selectors.field_selector =
      "spec.nodeName=" + node_name + ",spec.driver=" + std::string(kDraDriverName);
  return options;
}

} // namespace

SliceChanges planSliceChanges(const std::vector<nlohmann::ordered_json>& wanted,
                              const std::vector<json>& listed, int64_t last_generation) {
  std::vector<json> sorted = listed;
  std::sort(sorted.begin(), sorted.end(), [](const json& a, const json& b) {
    return metadataString(a, "name") < metadataString(b, "name");
  });
  std::vector<json> wanted_plain(wanted.begin(), wanted.end());
  const size_t kept = std::min(wanted_plain.size(), sorted.size());
  bool changed = sorted.size() < wanted_plain.size();
  int64_t highest = last_generation;
  for (const json& slice : sorted) {
    highest = std::max(highest, poolGeneration(slice));
  }
  for (size_t i = 0; i < kept && !changed; ++i) {
    changed = comparableSpec(sorted[i]) != comparableSpec(wanted_plain[i]) ||
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
        keepTaintTimes(spec, slice.value("spec", json::object()));
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
    changes.remove.push_back(metadataString(sorted[i], "name"));
  }
  return changes;
}

SlicePublisher::SlicePublisher(ApiClient& api, std::string node_name, PluginConfig config,
                               Logger& logger, DraMetrics& metrics, const Clock& clock,
                               SlicePublisherOptions options)
    : api_(api), node_name_(std::move(node_name)), config_(std::move(config)), logger_(logger),
      metrics_(metrics), clock_(clock), options_(std::move(options)),
      slices_(api, sliceCollection(), watchOptions(options_.watch, node_name_), logger, clock,
              [this] {
                const std::lock_guard<std::mutex> lock(mutex_);
                wake_pending_ = true;
                wake_.notify_all();
              }) {}

void SlicePublisher::start(NodeTopology topology) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    topology_ = std::move(topology);
  }
  slices_.start();
  thread_ = std::thread([this] { run(); });
}

void SlicePublisher::set(NodeTopology topology) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (topology_ == topology) {
    return;
  }
  topology_ = std::move(topology);
  wake_pending_ = true;
  wake_.notify_all();
}

void SlicePublisher::stop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
  }
  slices_.stop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

PublishingState SlicePublisher::state() const {
  PublishingState state;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    state = state_;
  }
  state.watch = slices_.status();
  return state;
}

void SlicePublisher::run() {
  using std::chrono::steady_clock;
  std::mt19937 random{std::random_device{}()};
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int failures = 0;
  std::optional<NodeTopology> published; // whose slices are wanted
  steady_clock::time_point next_topology_at{};
  std::optional<SliceSet> wanted;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_pending_ = false;
    const steady_clock::time_point now = clock_.now();
    if (!published || (*published != *topology_ && now >= next_topology_at)) {
      published = *topology_;
      next_topology_at = now + options_.min_topology_interval;
      wanted.reset();
    }
    lock.unlock();
    Result<bool> done = false;
    if (node_uid_.empty()) {
      if (Status read = readNodeUid(); !read) {
        done = read.error();
      }
    }
    const bool synced = slices_.status().synced;
    if (done.ok() && synced) {
      if (!wanted) {
        wanted =
            resourceSlicesFor(*published, config_, {node_name_, node_uid_}, 0, options_.slices);
      }
      done = reconcile(*wanted);
    }
    if (!done.ok() || *done) {
      metrics_.recordPublication(done.ok());
    }
    lock.lock();
    // Nothing to do until the topology or the watched slices change.
    std::chrono::milliseconds wait = std::chrono::hours(1);
    if (done.ok()) {
      failures = 0;
      state_.last_error.clear();
      if (synced) {
        state_.last_success = clock_.now();
      }
    } else {
      state_.last_error = done.error().message;
      wait = retryDelay(options_.backoff, failures++, ApiError{}, uniform(random));
      logger_.warn(
          "publishing the ResourceSlices failed; retrying",
          {{"error", done.error().message}, {"retry_in_ms", std::to_string(wait.count())}});
    }
    if (*published != *topology_) {
      wait = std::min(
          wait, std::chrono::ceil<std::chrono::milliseconds>(next_topology_at - clock_.now()));
    }
    clock_.waitFor(lock, wake_, std::max(wait, std::chrono::milliseconds(0)),
                   [this] { return stopping_ || wake_pending_; });
  }
}

Status SlicePublisher::readNodeUid() {
  const Result<std::string> node_path = objectPath(kNodes, "", node_name_);
  if (!node_path.ok()) {
    return node_path.error();
  }
  const ApiResult<json> node = api_.get(*node_path);
  if (!node.ok()) {
    return makeError("reading Node " + node_name_ + ": " + describe(node.error()));
  }
  std::string uid = metadataString(*node, "uid");
  if (uid.empty()) {
    return makeError("Node " + node_name_ + " has no metadata.uid");
  }
  node_uid_ = std::move(uid);
  return Ok{};
}

Result<bool> SlicePublisher::reconcile(SliceSet wanted) {
  std::vector<json> watched;
  for (auto& [name, slice] : slices_.objects()) {
    watched.push_back(std::move(slice));
  }
  for (const OptionalFeature& feature : optionalFeatures()) {
    if (dropped_features_.count(feature.field) == 0) {
      continue;
    }
    for (auto& slice : wanted.slices) {
      for (auto& device : slice["spec"]["devices"]) {
        feature.drop(device);
      }
    }
  }
  const SliceChanges changes = planSliceChanges(wanted.slices, watched, generation_);
  const std::string collection = sliceCollection();
  for (const std::string& name : changes.remove) {
    ApiResult<json> removed = api_.remove(collection + "/" + name);
    if (!removed.ok() && removed.error().code != 404) {
      return makeError("deleting ResourceSlice " + name + ": " + describe(removed.error()));
    }
    slices_.forget(name);
    logger_.info("deleted an extra ResourceSlice", {{"slice", name}});
  }
  for (json slice : changes.update) {
    // The watched object carries its resourceVersion: a PUT of it fails with 409 if someone
    // changed the slice since, and the watch then brings the newer one. No GET needed.
    const std::string name = metadataString(slice, "name");
    slice["apiVersion"] = wanted.slices.front()["apiVersion"].get<std::string>();
    slice["kind"] = wanted.slices.front()["kind"].get<std::string>();
    ApiResult<json> updated = api_.update(collection + "/" + name, slice);
    if (!updated.ok()) {
      return makeError("updating ResourceSlice " + name + ": " + describe(updated.error()));
    }
    noticeDroppedFeatures(slice, *updated);
    slices_.remember(*updated);
  }
  for (const json& slice : changes.create) {
    ApiResult<json> created = api_.create(collection, slice);
    if (!created.ok()) {
      return makeError("creating a ResourceSlice: " + describe(created.error()));
    }
    noticeDroppedFeatures(slice, *created);
    slices_.remember(*created);
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
  generation_ = changes.generation;
  return !changes.empty();
}

void SlicePublisher::noticeDroppedFeatures(const json& sent, const json& stored) {
  for (const OptionalFeature& feature : optionalFeatures()) {
    if (dropped_features_.count(feature.field) == 0 && anyDeviceHas(sent, feature.field) &&
        !anyDeviceHas(stored, feature.field)) {
      dropped_features_.insert(feature.field);
      logger_.warn("the API server dropped a feature's fields from the ResourceSlice: they are "
                   "published without them from now on",
                   {{"feature", feature.name}, {"field", feature.field}});
    }
  }
}

} // namespace kube_rdma
