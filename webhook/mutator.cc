#include "webhook/mutator.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "common/shorthand.h"
#include "common/strings.h"
#include "webhook/json_text.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

constexpr const char* kShmPath = "/dev/shm";
constexpr const char* kSocketIfname = "NCCL_SOCKET_IFNAME";

// Keys are looked up as string_view: nlohmann's std::less<> finds them without a std::string.
const json* member(const json& object, std::string_view key) {
  if (!object.is_object()) {
    return nullptr;
  }
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A view into `object`; "" when the member is absent or not a string.
std::string_view stringMember(const json& object, std::string_view key) {
  const json* value = member(object, key);
  return value != nullptr && value->is_string()
             ? std::string_view(value->get_ref<const std::string&>())
             : std::string_view();
}

std::string inQuotes(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.append(1, '"').append(text).append(1, '"');
  return out;
}

// An RFC 6902 operation, built in place (an initializer list would copy `value`).
json operation(const char* op, std::string path, json value) {
  json out = json::object();
  json::object_t& members = out.get_ref<json::object_t&>();
  members.emplace("op", op);
  members.emplace("path", std::move(path));
  members.emplace("value", std::move(value));
  return out;
}

// An array member, created empty when absent, so appends never need a parent that is missing.
json& arrayMember(json& object, const char* key) {
  json& value = object[key];
  if (value.is_null()) {
    value = json::array();
  }
  return value;
}

// Appending to a member that is neither absent, null nor an array fails as json::push_back does
// (the pod is then left unchanged as malformed), at the moment the old in-place append failed.
void requireAppendable(const json& container, const char* key) {
  const json* value = member(container, key);
  if (value != nullptr && !value->is_null() && !value->is_array()) {
    throw json::type_error::create(
        308, "cannot use push_back() with " + std::string(value->type_name()), value);
  }
}

bool asksFor(const json& container, const std::string& resource) {
  const json* resources = member(container, "resources");
  for (const char* kind : {"limits", "requests"}) {
    const json* list = resources != nullptr ? member(*resources, kind) : nullptr;
    if (list != nullptr && list->contains(resource)) {
      return true;
    }
  }
  return false;
}

const std::string* rdmaResourceOf(const json& container, const WebhookPolicy& policy) {
  for (const std::string& resource : policy.resources) {
    if (asksFor(container, resource)) {
      return &resource;
    }
  }
  return nullptr;
}

std::string skipReason(const json& annotations, const std::string& ns,
                       const WebhookPolicy& policy) {
  if (member(annotations, kMirrorAnnotation) != nullptr) {
    return "mirror pod";
  }
  if (stringMember(annotations, kInjectAnnotation) == "false") {
    return "opted out by kube-rdma.io/inject";
  }
  if (listContains(policy.exclude_namespaces, ns)) {
    return "namespace " + ns + " is excluded";
  }
  if (!policy.include_namespaces.empty() && !listContains(policy.include_namespaces, ns)) {
    return "namespace " + ns + " is not included";
  }
  return "";
}

// The container the shorthand annotation adds its resource to, and what it adds.
struct ShorthandTarget {
  const json* container = nullptr; // in the pod as sent; nullptr: nothing to add
  ShorthandRequest request;
};

// An error means the pod is admitted unchanged.
Result<ShorthandTarget> resolveShorthandTarget(const json& spec, const json& annotations,
                                               const std::string& ns, const WebhookPolicy& policy) {
  const json* value = member(annotations, kRdmaAnnotation);
  if (value == nullptr) {
    return ShorthandTarget{};
  }
  if (policy.shorthand_namespaces && !listContains(*policy.shorthand_namespaces, ns)) {
    return makeError(std::string(kRdmaAnnotation) + " is not allowed in namespace " + inQuotes(ns) +
                     " (policy shorthand.namespaces)");
  }
  if (!value->is_string()) {
    return makeError(std::string(kRdmaAnnotation) + " must be a string");
  }
  Result<ShorthandRequest> request =
      resolveShorthand(value->get_ref<const std::string&>(), policy.shorthand);
  if (!request.ok()) {
    return makeError(std::string(kRdmaAnnotation) + ": " + request.error().message);
  }
  const json* containers = member(spec, "containers");
  if (containers == nullptr || !containers->is_array() || containers->empty()) {
    return makeError(std::string(kRdmaAnnotation) + ": the pod has no containers");
  }
  const json* target = &containers->front();
  if (member(annotations, kRdmaContainerAnnotation) != nullptr) {
    const std::string_view wanted = stringMember(annotations, kRdmaContainerAnnotation);
    auto it = std::find_if(containers->begin(), containers->end(),
                           [&wanted](const json& c) { return stringMember(c, "name") == wanted; });
    if (wanted.empty() || it == containers->end()) {
      return makeError(std::string(kRdmaContainerAnnotation) +
                       " names no container of the pod: " + inQuotes(wanted));
    }
    target = &*it;
  }
  if (const std::string* existing = rdmaResourceOf(*target, policy)) {
    if (*existing != request->resource) {
      return makeError(std::string(kRdmaAnnotation) + " asks for " + request->resource +
                       " but container " + inQuotes(stringMember(*target, "name")) +
                       " already asks for " + *existing);
    }
    return ShorthandTarget{}; // already there: a second pass adds nothing
  }
  return ShorthandTarget{target, *request};
}

void addShorthandResource(json& container, const ShorthandRequest& request) {
  const std::string count = std::to_string(request.count);
  json& resources = container["resources"];
  resources["limits"][request.resource] = count;
  resources["requests"][request.resource] = count;
}

// Whether every node the pod may land on is guaranteed to carry label key=value.
bool pinnedToLabel(const json& spec, const std::string& key, const std::string& value) {
  if (const json* selector = member(spec, "nodeSelector");
      selector != nullptr && selector->contains(key) && (*selector)[key] == value) {
    return true;
  }
  const json* terms = member(spec, "affinity");
  for (const char* step :
       {"nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"}) {
    terms = terms != nullptr ? member(*terms, step) : nullptr;
  }
  if (terms == nullptr || !terms->is_array() || terms->empty()) {
    return false;
  }
  // Terms are ORed: each one must pin the label, with `In` and that single value.
  return std::all_of(terms->begin(), terms->end(), [&](const json& term) {
    const json* expressions = member(term, "matchExpressions");
    if (expressions == nullptr || !expressions->is_array()) {
      return false;
    }
    return std::any_of(expressions->begin(), expressions->end(), [&](const json& e) {
      const json* values = member(e, "values");
      return stringMember(e, "key") == key && stringMember(e, "operator") == "In" &&
             values != nullptr && values->is_array() && values->size() == 1 &&
             (*values)[0] == value;
    });
  });
}

const NodePoolProfile* pickProfile(const json& spec, const WebhookPolicy& policy) {
  for (const NodePoolProfile& profile : policy.profiles) {
    const bool match = std::all_of(
        profile.node_selector.begin(), profile.node_selector.end(),
        [&spec](const auto& label) { return pinnedToLabel(spec, label.first, label.second); });
    if (match) {
      return &profile;
    }
  }
  return nullptr;
}

// Cluster env, then the profile's by name, then the pod-network interface.
std::vector<PolicyEnvVar> envFor(const json& spec, const NodePoolProfile* profile,
                                 const WebhookPolicy& policy) {
  std::vector<PolicyEnvVar> env = policy.env;
  const auto set = [&env](const PolicyEnvVar& var) {
    auto it = std::find_if(env.begin(), env.end(),
                           [&var](const PolicyEnvVar& e) { return e.name == var.name; });
    if (it == env.end()) {
      env.push_back(var);
    } else {
      it->value = var.value;
    }
  };
  if (profile != nullptr) {
    std::for_each(profile->env.begin(), profile->env.end(), set);
  }
  const json* host_network = member(spec, "hostNetwork");
  const bool on_host_network = host_network != nullptr && *host_network == true;
  const bool has_ifname = std::any_of(
      env.begin(), env.end(), [](const PolicyEnvVar& e) { return e.name == kSocketIfname; });
  if (!on_host_network && !has_ifname && !policy.pod_network_socket_ifname.empty()) {
    env.push_back({kSocketIfname, policy.pod_network_socket_ifname});
  }
  return env;
}

// An RDMA container's changes. The arrays the webhook only appends to (env, volumeMounts) are
// not copied: the new elements are kept apart and read together with the pod's. The members
// edited in place (resources, securityContext) are copied, and only when they change.
struct Slot {
  std::string path; // JSON Pointer of the container
  const json* original;
  json edited = json::object(); // changed members only, whole
  std::vector<json> env;        // appended to env
  std::vector<json> mounts;     // appended to volumeMounts

  std::string_view name() const { return stringMember(*original, "name"); }

  // The first element of array member `list` (the pod's, then the appended ones) that `match`es.
  template <typename Match> const json* findIf(std::string_view list, Match match) const {
    if (const json* items = member(*original, list); items != nullptr && items->is_array()) {
      if (auto it = std::find_if(items->begin(), items->end(), match); it != items->end()) {
        return &*it;
      }
    }
    const std::vector<json>& added = list == "env" ? env : mounts;
    auto it = std::find_if(added.begin(), added.end(), match);
    return it == added.end() ? nullptr : &*it;
  }

  const json* envEntry(std::string_view var) const {
    return findIf("env", [var](const json& e) { return stringMember(e, "name") == var; });
  }
};

// The added names, in policy order.
std::vector<std::string> addEnv(Slot& slot, const std::vector<PolicyEnvVar>& env) {
  std::vector<std::string> added;
  for (const PolicyEnvVar& var : env) {
    if (slot.envEntry(var.name) == nullptr) {
      requireAppendable(*slot.original, "env");
      json entry = json::object();
      entry.get_ref<json::object_t&>().emplace("name", var.name);
      entry.get_ref<json::object_t&>().emplace("value", var.value);
      slot.env.push_back(std::move(entry));
      added.push_back(var.name);
    }
  }
  return added;
}

bool addIpcLock(Slot& slot) {
  const json* context = member(*slot.original, "securityContext");
  if (context != nullptr && member(*context, "privileged") != nullptr &&
      (*context)["privileged"] == true) {
    return false;
  }
  const json* capabilities = context != nullptr ? member(*context, "capabilities") : nullptr;
  for (const char* list : {"add", "drop"}) {
    const json* names = capabilities != nullptr ? member(*capabilities, list) : nullptr;
    // Present already, granted by ALL, or dropped on purpose: the user decided.
    if (names != nullptr && names->is_array() &&
        std::any_of(names->begin(), names->end(), [](const json& n) {
          return n == "IPC_LOCK" || n == "CAP_IPC_LOCK" || n == "ALL";
        })) {
      return false;
    }
  }
  json& edited = slot.edited["securityContext"];
  if (context != nullptr) {
    edited = *context;
  }
  arrayMember(edited["capabilities"], "add").push_back("IPC_LOCK");
  return true;
}

bool mountsShm(const json& container) {
  const json* mounts = member(container, "volumeMounts");
  if (mounts == nullptr || !mounts->is_array()) {
    return false;
  }
  return std::any_of(mounts->begin(), mounts->end(), [](const json& m) {
    const std::string_view path = stringMember(m, "mountPath");
    return path == kShmPath || path == "/dev/shm/" || path == "/dev" || path == "/dev/";
  });
}

bool isOurShmVolume(const json& volume) {
  const json* empty_dir = member(volume, "emptyDir");
  return empty_dir != nullptr && stringMember(*empty_dir, "medium") == "Memory";
}

// The name of the shm volume to mount: ours if a previous pass added it, otherwise a name no
// volume of the pod uses. Adds the volume when it is not there yet.
std::string ensureShmVolume(json& volumes, const std::string& size_limit) {
  for (int suffix = 0;; ++suffix) {
    std::string name =
        suffix == 0 ? kShmVolumeName : std::string(kShmVolumeName) + "-" + std::to_string(suffix);
    auto it = std::find_if(volumes.begin(), volumes.end(),
                           [&name](const json& v) { return stringMember(v, "name") == name; });
    if (it == volumes.end()) {
      json empty_dir = json::object();
      empty_dir.get_ref<json::object_t&>().emplace("medium", "Memory");
      empty_dir.get_ref<json::object_t&>().emplace("sizeLimit", size_limit);
      json volume = json::object();
      volume.get_ref<json::object_t&>().emplace("name", name);
      volume.get_ref<json::object_t&>().emplace("emptyDir", std::move(empty_dir));
      volumes.push_back(std::move(volume));
      return name;
    }
    if (isOurShmVolume(*it)) {
      return name;
    }
  }
}

// Sum of the memory limits of the containers that run together (regular ones and native
// sidecars); nullopt when one of them has no limit, since then there is no pod limit.
std::optional<double> podMemoryLimit(const json& spec) {
  double total = 0;
  for (const char* list : {"initContainers", "containers"}) {
    const json* containers = member(spec, list);
    if (containers == nullptr || !containers->is_array()) {
      continue;
    }
    for (const json& c : *containers) {
      if (std::string_view(list) == "initContainers" &&
          stringMember(c, "restartPolicy") != "Always") {
        continue;
      }
      const json* resources = member(c, "resources");
      const json* limits = resources != nullptr ? member(*resources, "limits") : nullptr;
      Result<double> limit = parseQuantity(
          std::string(limits != nullptr ? stringMember(*limits, "memory") : std::string_view()));
      if (!limit.ok()) {
        return std::nullopt;
      }
      total += *limit;
    }
  }
  return total;
}

// The sizeLimit of the memory volume mounted at /dev/shm in the container, if any.
std::optional<std::string> shmSizeLimit(const json& volumes, const Slot& slot) {
  std::optional<std::string> limit;
  slot.findIf("volumeMounts", [&](const json& m) {
    if (stringMember(m, "mountPath") != kShmPath) {
      return false;
    }
    for (const json& v : volumes) {
      if (stringMember(v, "name") == stringMember(m, "name") && isOurShmVolume(v)) {
        const std::string_view size = stringMember(v["emptyDir"], "sizeLimit");
        limit = size.empty() ? std::nullopt : std::optional<std::string>(size);
        return true;
      }
    }
    return false;
  });
  return limit;
}

void warnAbout(const json& spec, const json& volumes, const std::vector<Slot>& slots,
               std::vector<std::string>& out) {
  for (const Slot& slot : slots) {
    const std::string name = inQuotes(slot.name());
    if (const json* e = slot.envEntry("NCCL_IB_DISABLE"); e && stringMember(*e, "value") == "1") {
      out.push_back("container " + name + " sets NCCL_IB_DISABLE=1: NCCL will not use RDMA");
    }
    if (const json* e = slot.envEntry("NCCL_IB_HCA")) {
      const std::string_view value = stringMember(*e, "value");
      const std::string_view list = value.starts_with('^') ? value.substr(1) : value;
      if (!list.empty() && list.front() != '=') {
        out.push_back("container " + name +
                      ": NCCL_IB_HCA without '=' matches prefixes (mlx5_1 also picks mlx5_10..19)");
      }
    }
  }
  const std::optional<double> memory = podMemoryLimit(spec);
  for (const Slot& slot : slots) {
    std::optional<std::string> limit = shmSizeLimit(volumes, slot);
    Result<double> bytes = parseQuantity(limit.value_or(""));
    if (memory && bytes.ok() && *bytes > *memory) {
      out.push_back("/dev/shm sizeLimit " + *limit +
                    " is above the pod's memory limit; tmpfs counts as pod memory");
      break;
    }
  }
}

// Merges this pass's record into the one a previous pass wrote, so nothing recorded is lost.
json mergeRecord(const json* previous, json record) {
  if (previous == nullptr || !previous->is_string()) {
    return record;
  }
  json old = json::parse(previous->get_ref<const std::string&>(), nullptr, false);
  if (!old.is_object() || !old.contains("containers") || !old["containers"].is_object()) {
    return record;
  }
  for (auto& [name, items] : old["containers"].items()) {
    json& merged = record["containers"][name];
    for (const json& item : items) {
      if (std::find(merged.begin(), merged.end(), item) == merged.end()) {
        merged.push_back(item);
      }
    }
  }
  for (const char* key : {"profile", "volume"}) {
    if (!record.contains(key) && old.contains(key)) {
      record[key] = old[key];
    }
  }
  return record;
}

// json::diff(before, after, path) appended to `patch`. When `after` only appends to the array
// `before` (what the webhook does to volumes) the result is known without json::diff's walk,
// which builds a path string for every member of every equal element: one "add" at "/-" per new
// element, exactly as json::diff writes them.
void appendDiff(const json& before, json after, const std::string& path, json& patch) {
  if (before.is_array() && after.is_array() && after.size() >= before.size() &&
      std::equal(before.begin(), before.end(), after.begin())) {
    for (size_t i = before.size(); i < after.size(); ++i) {
      patch.push_back(operation("add", path + "/-", std::move(after[i])));
    }
    return;
  }
  for (json& op : json::diff(before, after, path)) {
    patch.push_back(std::move(op));
  }
}

// The operations json::diff gives for the array member `key` of `container` with `items`
// appended: "/-" adds to an array, the whole array where there was none, a replace of a null.
void appendArrayOps(const json& container, const char* key, std::vector<json> items,
                    const std::string& path, json& patch) {
  if (items.empty()) {
    return;
  }
  const std::string member_path = path + "/" + key;
  const json* before = member(container, key);
  if (before != nullptr && before->is_array()) {
    for (json& item : items) {
      patch.push_back(operation("add", member_path + "/-", std::move(item)));
    }
    return;
  }
  json after(std::move(items));
  if (before == nullptr) {
    patch.push_back(operation("add", member_path, std::move(after)));
  } else {
    appendDiff(*before, std::move(after), member_path, patch);
  }
}

// In json::diff's order of the container's members: env, resources, securityContext,
// volumeMounts. The edited objects are diffed: json::diff adds missing members as whole values,
// escapes keys with ~0/~1 and replaces only paths that exist.
void appendContainerOps(Slot& slot, json& patch) {
  appendArrayOps(*slot.original, "env", std::move(slot.env), slot.path, patch);
  for (const char* key : {"resources", "securityContext"}) {
    auto after = slot.edited.find(key);
    const json* before = member(*slot.original, key);
    if (after == slot.edited.end() || (before != nullptr && *before == *after)) {
      continue;
    }
    const std::string member_path = slot.path + "/" + key;
    if (before == nullptr) {
      patch.push_back(operation("add", member_path, std::move(*after)));
    } else {
      appendDiff(*before, std::move(*after), member_path, patch);
    }
  }
  appendArrayOps(*slot.original, "volumeMounts", std::move(slot.mounts), slot.path, patch);
}

MutationResult mutate(const json& pod, const std::string& request_namespace,
                      const WebhookPolicy& policy) {
  MutationResult result;
  const json* metadata = member(pod, "metadata");
  const json* original_annotations = metadata ? member(*metadata, "annotations") : nullptr;
  const json no_annotations = json::object();
  const json& annotations_in = original_annotations ? *original_annotations : no_annotations;
  std::string ns(metadata ? stringMember(*metadata, "namespace") : std::string_view());
  if (ns.empty()) {
    ns = request_namespace;
  }
  result.skipped = skipReason(annotations_in, ns, policy);
  const json* original_spec = member(pod, "spec");
  if (!result.skipped.empty() || original_spec == nullptr) {
    return result;
  }

  const json& spec = *original_spec; // read only: what changes is kept in the slots
  Result<ShorthandTarget> shorthand = resolveShorthandTarget(spec, annotations_in, ns, policy);
  if (!shorthand.ok()) {
    result.skipped = "bad shorthand";
    result.warnings.push_back("pod left unchanged: " + shorthand.error().message);
    return result;
  }

  // The RDMA containers; the rest of the pod (often most of it: managedFields, other
  // containers) is never copied.
  std::vector<Slot> slots;
  json record = json::object();
  for (const char* list : {"initContainers", "containers"}) {
    const json* items = member(spec, list);
    for (size_t i = 0; items != nullptr && items->is_array() && i < items->size(); ++i) {
      const json& c = (*items)[i];
      const bool target = &c == shorthand->container;
      if (!target && rdmaResourceOf(c, policy) == nullptr) {
        continue;
      }
      Slot slot{"/spec/" + std::string(list) + "/" + std::to_string(i), &c, json::object(), {}, {}};
      if (target) {
        if (const json* resources = member(c, "resources")) {
          slot.edited["resources"] = *resources;
        }
        addShorthandResource(slot.edited, shorthand->request);
        result.applied.insert("resources");
        record["containers"][std::string(slot.name())].push_back("resources");
      }
      slots.push_back(std::move(slot));
    }
  }
  if (slots.empty()) {
    return result;
  }

  const json* original_volumes = member(spec, "volumes");
  json volumes = original_volumes != nullptr ? *original_volumes : json::array();
  const NodePoolProfile* profile = pickProfile(spec, policy);
  const std::vector<PolicyEnvVar> env = envFor(spec, profile, policy);
  const std::string size_limit =
      profile && profile->shm_size_limit ? *profile->shm_size_limit : policy.shm_size_limit;
  for (Slot& slot : slots) {
    const std::string name(slot.name());
    json& items = record["containers"][name];
    const json* env_from = member(*slot.original, "envFrom");
    if (env_from != nullptr && env_from->is_array() && !env_from->empty() &&
        policy.env_from == EnvFromMode::kSkip) {
      result.warnings.push_back("container " + inQuotes(name) +
                                " uses envFrom: policy env not added (envFrom: skip)");
    } else {
      for (const std::string& added : addEnv(slot, env)) {
        result.applied.insert("env");
        items.push_back("env:" + added);
      }
    }
    if (policy.ipc_lock && addIpcLock(slot)) {
      result.applied.insert("ipc-lock");
      items.push_back("ipc-lock");
    }
    if (policy.shm && !mountsShm(*slot.original)) {
      const std::string volume = ensureShmVolume(volumes, size_limit);
      requireAppendable(*slot.original, "volumeMounts");
      json mount = json::object();
      mount.get_ref<json::object_t&>().emplace("name", volume);
      mount.get_ref<json::object_t&>().emplace("mountPath", kShmPath);
      slot.mounts.push_back(std::move(mount));
      result.applied.insert("shm");
      items.push_back("shm");
      record["volume"] = volume;
    }
    if (items.empty()) {
      record["containers"].erase(name);
    }
  }
  // Only the annotations this pass sets: json::diff of the whole map gives nothing for the rest.
  json annotations = json::object();
  for (const auto& [key, value] : policy.annotations) {
    if (!annotations_in.contains(key)) {
      annotations[key] = value;
      result.applied.insert("annotations");
      record["annotations"].push_back(key);
    }
  }
  warnAbout(spec, volumes, slots, result.warnings);
  if (result.applied.empty()) {
    return result; // everything was there already: no patch, not even the record
  }
  if (profile != nullptr) {
    record["profile"] = profile->name;
  }
  const json* previous_record = member(annotations_in, kInjectedAnnotation);
  std::string record_text;
  appendJsonText(mergeRecord(previous_record, std::move(record)), record_text);
  annotations[kInjectedAnnotation] = std::move(record_text);

  if (original_annotations == nullptr) {
    result.patch.push_back(
        metadata != nullptr ? operation("add", "/metadata/annotations", std::move(annotations))
                            : operation("add", "/metadata",
                                        json::object({{"annotations", std::move(annotations)}})));
  } else if (original_annotations->is_object()) {
    json before = json::object();
    if (previous_record != nullptr) {
      before[kInjectedAnnotation] = *previous_record;
    }
    appendDiff(before, std::move(annotations), "/metadata/annotations", result.patch);
  } else {
    // null, or a shape the API server never sends: set on a copy, as json would, and diff.
    json whole = *original_annotations;
    for (auto& [key, value] : annotations.items()) {
      whole[key] = std::move(value);
    }
    appendDiff(*original_annotations, std::move(whole), "/metadata/annotations", result.patch);
  }
  for (Slot& slot : slots) {
    appendContainerOps(slot, result.patch);
  }
  if (original_volumes != nullptr) {
    appendDiff(*original_volumes, std::move(volumes), "/spec/volumes", result.patch);
  } else if (!volumes.empty()) {
    result.patch.push_back(operation("add", "/spec/volumes", std::move(volumes)));
  }
  return result;
}

} // namespace

const JsonFilter& podMembersRead() {
  static const JsonFilter pod = [] {
    const JsonFilter all = JsonFilter::whole();
    const JsonFilter container = {{"name", all},
                                  {"env", all},
                                  {"envFrom", all},
                                  {"resources", all},
                                  {"securityContext", all},
                                  {"volumeMounts", all},
                                  {"restartPolicy", all}};
    const JsonFilter node_affinity = {{"requiredDuringSchedulingIgnoredDuringExecution",
                                       {{"nodeSelectorTerms", {{"matchExpressions", all}}}}}};
    return JsonFilter{{"metadata", {{"namespace", all}, {"annotations", all}}},
                      {"spec",
                       {{"containers", container},
                        {"initContainers", container},
                        {"volumes", {{"name", all}, {"emptyDir", all}}},
                        {"hostNetwork", all},
                        {"nodeSelector", all},
                        {"affinity", {{"nodeAffinity", node_affinity}}}}}};
  }();
  return pod;
}

MutationResult mutatePod(const json& pod, const std::string& request_namespace,
                         const WebhookPolicy& policy) {
  try {
    return mutate(pod, request_namespace, policy);
  } catch (const json::exception& e) {
    // A pod the API server decoded always has the shapes read above; anything else is left alone.
    MutationResult result;
    result.skipped = "malformed pod";
    result.warnings.push_back(std::string("pod left unchanged: unexpected shape: ") + e.what());
    return result;
  }
}

} // namespace kube_rdma
