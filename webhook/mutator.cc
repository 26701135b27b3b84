#include "webhook/mutator.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "common/shorthand.h"
#include "common/strings.h"
#include "webhook/pod_fields.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

constexpr const char* kShmPath = "/dev/shm";
constexpr const char* kSocketIfname = "NCCL_SOCKET_IFNAME";

std::string inQuotes(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

// An array member, created empty when absent or null. Appending to any other shape throws
// json::type_error: the pod is then left unchanged as malformed.
json& arrayMember(json& object, const char* key) {
  json& value = object[key];
  if (value.is_null()) {
    value = json::array();
  }
  return value;
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

const json* envEntry(const json& container, std::string_view name) {
  const json* env = member(container, "env");
  if (env == nullptr || !env->is_array()) {
    return nullptr;
  }
  auto it = std::find_if(env->begin(), env->end(),
                         [name](const json& e) { return stringMember(e, "name") == name; });
  return it == env->end() ? nullptr : &*it;
}

// The added names, in policy order.
std::vector<std::string> addEnv(json& container, const std::vector<PolicyEnvVar>& env) {
  std::vector<std::string> added;
  for (const PolicyEnvVar& var : env) {
    if (envEntry(container, var.name) == nullptr) {
      arrayMember(container, "env").push_back({{"name", var.name}, {"value", var.value}});
      added.push_back(var.name);
    }
  }
  return added;
}

bool addIpcLock(json& container) {
  const json* context = member(container, "securityContext");
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
  arrayMember(container["securityContext"]["capabilities"], "add").push_back("IPC_LOCK");
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
// volume of the pod uses. Adds the volume to `volumes` (the pod's spec.volumes, null when it has
// none) when it is not there yet.
std::string ensureShmVolume(json& volumes, const std::string& size_limit) {
  if (volumes.is_null()) {
    volumes = json::array();
  }
  for (int suffix = 0;; ++suffix) {
    std::string name =
        suffix == 0 ? kShmVolumeName : std::string(kShmVolumeName) + "-" + std::to_string(suffix);
    auto it = std::find_if(volumes.begin(), volumes.end(),
                           [&name](const json& v) { return stringMember(v, "name") == name; });
    if (it == volumes.end()) {
      volumes.push_back(
          {{"name", name}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", size_limit}}}});
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
std::optional<std::string> shmSizeLimit(const json& volumes, const json& container) {
  const json* mounts = member(container, "volumeMounts");
  if (mounts == nullptr || !mounts->is_array() || !volumes.is_array()) {
    return std::nullopt;
  }
  for (const json& m : *mounts) {
    if (stringMember(m, "mountPath") != kShmPath) {
      continue;
    }
    for (const json& v : volumes) {
      if (stringMember(v, "name") == stringMember(m, "name") && isOurShmVolume(v)) {
        const std::string_view limit = stringMember(v["emptyDir"], "sizeLimit");
        return limit.empty() ? std::nullopt : std::optional<std::string>(limit);
      }
    }
  }
  return std::nullopt;
}

// `volumes` is spec.volumes as changed, the rest of `spec` is the pod's.
// The container's security setting `key`, else the pod's (Kubernetes' own precedence).
const json* securitySetting(const json& spec, const json& container, std::string_view key) {
  for (const json* owner : {&container, &spec}) {
    if (const json* context = member(*owner, "securityContext")) {
      if (const json* value = member(*context, key)) {
        return value;
      }
    }
  }
  return nullptr;
}

// Known to run as non-root from the pod alone; an image's own USER is not visible here.
bool runsAsNonRoot(const json& spec, const json& container) {
  if (const json* uid = securitySetting(spec, container, "runAsUser")) {
    return uid->is_number() && *uid != 0;
  }
  const json* non_root = securitySetting(spec, container, "runAsNonRoot");
  return non_root != nullptr && *non_root == true;
}

void warnAbout(const json& spec, const json& volumes, const std::vector<json*>& rdma,
               const WebhookPolicy& policy, std::vector<std::string>& out) {
  for (const json* c : rdma) {
    const std::string name = inQuotes(stringMember(*c, "name"));
    if (!policy.cdi && runsAsNonRoot(spec, *c)) {
      out.push_back("container " + name +
                    " runs as non-root: IPC_LOCK does not lift its memlock limit without CDI");
    }
    if (const json* e = envEntry(*c, "NCCL_IB_DISABLE"); e && stringMember(*e, "value") == "1") {
      out.push_back("container " + name + " sets NCCL_IB_DISABLE=1: NCCL will not use RDMA");
    }
    if (const json* e = envEntry(*c, "NCCL_IB_HCA")) {
      const std::string_view value = stringMember(*e, "value");
      const std::string_view list = value.starts_with('^') ? value.substr(1) : value;
      if (!list.empty() && list.front() != '=') {
        out.push_back("container " + name +
                      ": NCCL_IB_HCA without '=' matches prefixes (mlx5_1 also picks mlx5_10..19)");
      }
    }
  }
  const std::optional<double> memory = podMemoryLimit(spec);
  for (const json* c : rdma) {
    std::optional<std::string> limit = shmSizeLimit(volumes, *c);
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

// Writes the RFC 6902 operations that turn members of the pod as sent into their changed copies.
// The mutator only adds, so it needs no general diff: a member the pod lacks (absent or null) is
// added whole, an array gets its new elements appended ("/-"), a changed value is replaced by
// "add" (which replaces an existing member), and every path names what the pod has.
class PatchWriter {
public:
  explicit PatchWriter(json& patch) : patch_(patch) {}

  // `before` and `after`: one member as sent and as changed; either may be absent (nullptr).
  void change(const json* before, const json* after, const std::string& path) {
    if (after == nullptr || (before == nullptr ? after->is_null() : *before == *after)) {
      return;
    }
    if (before != nullptr && before->is_array() && after->is_array() &&
        before->size() <= after->size() &&
        std::equal(before->begin(), before->end(), after->begin())) {
      for (size_t i = before->size(); i < after->size(); ++i) {
        add(path + "/-", (*after)[i]);
      }
      return;
    }
    if (added_whole_.insert(path).second) {
      add(path, *after);
    }
  }

  // change() of the member reached from `before` and `after` by `keys`, where the first member
  // the pod lacks is added whole.
  void walk(const json& before, const json& after, std::string path,
            std::initializer_list<std::string_view> keys) {
    const json* b = &before;
    const json* a = &after;
    for (const std::string_view key : keys) {
      path += '/';
      for (const char c : key) { // RFC 6901
        if (c == '~') {
          path += "~0";
        } else if (c == '/') {
          path += "~1";
        } else {
          path += c;
        }
      }
      b = member(*b, key);
      a = member(*a, key);
      if (a == nullptr) {
        return;
      }
      if (b == nullptr || b->is_null()) {
        change(b, a, path);
        return;
      }
    }
    change(b, a, path);
  }

private:
  void add(const std::string& path, const json& value) {
    patch_.push_back({{"op", "add"}, {"path", path}, {"value", value}});
  }

  json& patch_;
  std::set<std::string> added_whole_;
};

MutationResult mutate(const json& pod, const std::string& request_namespace,
                      const WebhookPolicy& policy, const PodRdmaClaims& claims) {
  MutationResult result;
  const json* metadata = member(pod, "metadata");
  const json* annotations_in = metadata ? member(*metadata, "annotations") : nullptr;
  const json no_annotations = json::object();
  const json& annotations_read = annotations_in ? *annotations_in : no_annotations;
  const std::string ns = podNamespace(pod, request_namespace);
  result.skipped = skipReason(annotations_read, ns, policy);
  const json* spec_in = member(pod, "spec");
  if (!result.skipped.empty() || spec_in == nullptr) {
    return result;
  }
  Result<ShorthandTarget> shorthand =
      resolveShorthandTarget(*spec_in, annotations_read, ns, policy);
  if (!shorthand.ok()) {
    result.skipped = "bad shorthand";
    result.warnings.push_back("pod left unchanged: " + shorthand.error().message);
    return result;
  }

  // The RDMA containers by place, each with a copy to change: most pods have none.
  struct Place {
    const char* list;
    size_t index;
    bool shorthand_target;
    json after;
  };
  std::vector<Place> places;
  for (const char* list : {"initContainers", "containers"}) {
    const json* items = member(*spec_in, list);
    for (size_t i = 0; items != nullptr && items->is_array() && i < items->size(); ++i) {
      const json& c = (*items)[i];
      const bool target = &c == shorthand->container;
      if (target || rdmaResourceOf(c, policy) != nullptr || usesRdmaClaim(c, claims)) {
        places.push_back({list, i, target, c});
      }
    }
  }
  if (places.empty()) {
    return result;
  }

  // The changes are made to copies of what may change (the metadata, the RDMA containers,
  // spec.volumes), not of the whole pod, whose other members would be copied and compared for
  // nothing.
  json metadata_after = metadata != nullptr ? *metadata : json();
  json& annotations = metadata_after["annotations"];
  const json* volumes_in = member(*spec_in, "volumes");
  json volumes = volumes_in != nullptr ? *volumes_in : json();
  json record = json::object();
  std::vector<json*> rdma;
  for (Place& place : places) {
    json& c = place.after;
    rdma.push_back(&c);
    if (place.shorthand_target) {
      const std::string count = std::to_string(shorthand->request.count);
      c["resources"]["limits"][shorthand->request.resource] = count;
      c["resources"]["requests"][shorthand->request.resource] = count;
      result.applied.insert("resources");
      record["containers"][std::string(stringMember(c, "name"))].push_back("resources");
    }
  }

  const NodePoolProfile* profile = pickProfile(*spec_in, policy);
  const std::vector<PolicyEnvVar> env = envFor(*spec_in, profile, policy);
  const std::string size_limit =
      profile && profile->shm_size_limit ? *profile->shm_size_limit : policy.shm_size_limit;
  for (json* c : rdma) {
    const std::string name(stringMember(*c, "name"));
    json& items = record["containers"][name];
    const json* env_from = member(*c, "envFrom");
    if (env_from != nullptr && env_from->is_array() && !env_from->empty() &&
        policy.env_from == EnvFromMode::kSkip) {
      result.warnings.push_back("container " + inQuotes(name) +
                                " uses envFrom: policy env not added (envFrom: skip)");
    } else {
      for (const std::string& added : addEnv(*c, env)) {
        result.applied.insert("env");
        items.push_back("env:" + added);
      }
    }
    if (policy.ipc_lock && addIpcLock(*c)) {
      result.applied.insert("ipc-lock");
      items.push_back("ipc-lock");
    }
    if (policy.shm && !mountsShm(*c)) {
      const std::string volume = ensureShmVolume(volumes, size_limit);
      arrayMember(*c, "volumeMounts").push_back({{"name", volume}, {"mountPath", kShmPath}});
      result.applied.insert("shm");
      items.push_back("shm");
      record["volume"] = volume;
    }
    if (items.empty()) {
      record["containers"].erase(name);
    }
  }
  for (const auto& [key, value] : policy.annotations) {
    if (!annotations_read.contains(key)) {
      annotations[key] = value;
      result.applied.insert("annotations");
      record["annotations"].push_back(key);
    }
  }
  warnAbout(*spec_in, volumes, rdma, policy, result.warnings);
  if (result.applied.empty()) {
    return result; // everything was there already: no patch, not even the record
  }
  if (profile != nullptr) {
    record["profile"] = profile->name;
  }
  annotations[kInjectedAnnotation] =
      mergeRecord(member(annotations_read, kInjectedAnnotation), std::move(record)).dump();

  // The patch: what each copy gained, at the paths of the pod as sent.
  PatchWriter patch(result.patch);
  if (metadata == nullptr) {
    patch.change(nullptr, &metadata_after, "/metadata");
  } else {
    for (const auto& [key, value] : policy.annotations) {
      patch.walk(*metadata, metadata_after, "/metadata", {"annotations", key});
    }
    patch.walk(*metadata, metadata_after, "/metadata", {"annotations", kInjectedAnnotation});
  }
  for (const Place& place : places) {
    const json& before = (*spec_in)[place.list][place.index];
    const std::string path = "/spec/" + std::string(place.list) + "/" + std::to_string(place.index);
    if (place.shorthand_target) {
      for (const char* kind : {"limits", "requests"}) {
        patch.walk(before, place.after, path, {"resources", kind, shorthand->request.resource});
      }
    }
    patch.walk(before, place.after, path, {"env"});
    patch.walk(before, place.after, path, {"securityContext", "capabilities", "add"});
    patch.walk(before, place.after, path, {"volumeMounts"});
  }
  patch.change(volumes_in, &volumes, "/spec/volumes");
  return result;
}

} // namespace

std::string podSkipReason(const json& pod, const std::string& request_namespace,
                          const WebhookPolicy& policy) {
  const json* metadata = member(pod, "metadata");
  const json* annotations = metadata != nullptr ? member(*metadata, "annotations") : nullptr;
  return skipReason(annotations != nullptr ? *annotations : json::object(),
                    podNamespace(pod, request_namespace), policy);
}

MutationResult mutatePod(const json& pod, const std::string& request_namespace,
                         const WebhookPolicy& policy, const PodRdmaClaims& claims) {
  try {
    return mutate(pod, request_namespace, policy, claims);
  } catch (const json::exception& e) {
    // A pod the API server decoded always has the shapes read above; anything else is left alone.
    MutationResult result;
    result.skipped = "malformed pod";
    result.warnings.push_back(std::string("pod left unchanged: unexpected shape: ") + e.what());
    return result;
  }
}

} // namespace kube_rdma
