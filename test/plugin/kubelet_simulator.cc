#include "test/plugin/kubelet_simulator.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <regex>

namespace kube_rdma {
namespace {

constexpr const char* kSupportedVersion = "v1beta1";
constexpr auto kDialTimeout = std::chrono::seconds(10); // the kubelet's

bool isQualifiedName(const std::string& value) {
  static const std::regex name_part("^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$");
  static const std::regex dns_subdomain(
      "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
  const auto slash = value.find('/');
  const std::string name = slash == std::string::npos ? value : value.substr(slash + 1);
  if (name.empty() || name.size() > 63 || !std::regex_match(name, name_part)) {
    return false;
  }
  if (slash == std::string::npos) {
    return true;
  }
  const std::string prefix = value.substr(0, slash);
  return !prefix.empty() && prefix.size() <= 253 && std::regex_match(prefix, dns_subdomain);
}

} // namespace

bool isExtendedResourceName(const std::string& name) {
  const bool native =
      name.find('/') == std::string::npos || name.find("kubernetes.io/") != std::string::npos;
  if (native || name.rfind("requests.", 0) == 0) {
    return false;
  }
  return isQualifiedName("requests." + name);
}

int SimulatedResource::healthyCount() const {
  return static_cast<int>(std::count_if(devices.begin(), devices.end(),
                                        [](const auto& d) { return d.health() == "Healthy"; }));
}

class KubeletSimulator::RegistrationService final : public v1beta1::Registration::Service {
public:
  explicit RegistrationService(KubeletSimulator& kubelet) : kubelet_(kubelet) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    return kubelet_.onRegister(*request);
  }

private:
  KubeletSimulator& kubelet_;
};

KubeletSimulator::KubeletSimulator(std::string dir)
    : dir_(std::move(dir)), service_(std::make_unique<RegistrationService>(*this)) {}

KubeletSimulator::~KubeletSimulator() {
  stop();
}

Status KubeletSimulator::start() {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + dir_ + "/kubelet.sock", grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) {
    return makeError("simulated kubelet cannot serve " + dir_ + "/kubelet.sock");
  }
  return Ok{};
}

void KubeletSimulator::stop() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
    server_.reset();
  }
  dropClients();
}

Status KubeletSimulator::restart() {
  stop();
  // CleanupPluginDirectory: every socket goes, the checkpoint and other files stay.
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (const dirent* entry = ::readdir(d)) {
      const std::string path = dir_ + "/" + entry->d_name;
      struct stat st {};
      if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
        ::unlink(path.c_str());
      }
    }
    ::closedir(d);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++view_.generation;
    // Resources come back from the checkpoint with no devices until the plugin re-registers.
    for (auto& [name, resource] : view_.resources) {
      resource.devices.clear();
      resource.streaming = false;
    }
  }
  changed_.notify_all();
  return start();
}

void KubeletSimulator::dropClients() {
  std::vector<std::unique_ptr<Client>> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [name, client] : clients_) {
      done.push_back(std::move(client));
    }
    clients_.clear();
    for (auto& client : retired_) {
      done.push_back(std::move(client));
    }
    retired_.clear();
  }
  for (auto& client : done) {
    client->stream_context->TryCancel();
    if (client->stream_thread.joinable()) {
      client->stream_thread.join();
    }
  }
}

grpc::Status KubeletSimulator::onRegister(const v1beta1::RegisterRequest& request) {
  auto reject = [this](const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      view_.rejections.push_back(message);
    }
    changed_.notify_all();
    return grpc::Status(grpc::StatusCode::UNKNOWN, message);
  };
  if (request.version() != kSupportedVersion) {
    return reject("requested device plugin API version " + request.version() +
                  " is not supported by kubelet (supported: v1beta1)");
  }
  if (!isExtendedResourceName(request.resource_name())) {
    return reject("invalid name of device plugin socket: " + request.resource_name() +
                  " is not an extended resource name");
  }
  // The endpoint is a file name joined to the device-plugins directory.
  const std::string socket = dir_ + "/" + request.endpoint();
  auto client = std::make_unique<Client>();
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  auto channel =
      grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + kDialTimeout)) {
    return reject("failed to dial device plugin at " + socket);
  }
  client->stub = v1beta1::DevicePlugin::NewStub(channel);
  v1beta1::DevicePluginOptions options;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kDialTimeout);
    v1beta1::Empty empty;
    const grpc::Status status = client->stub->GetDevicePluginOptions(&context, empty, &options);
    if (!status.ok()) {
      return reject("GetDevicePluginOptions failed: " + status.error_message());
    }
  }
  client->stream_context = std::make_unique<grpc::ClientContext>();
  Client* raw = client.get();
  int generation = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation = view_.generation;
    auto& resource = view_.resources[request.resource_name()];
    resource.endpoint = socket;
    resource.options = options;
    resource.registrations += 1;
    resource.registered_generation = generation;
    resource.registered_at = std::chrono::steady_clock::now();
    auto& slot = clients_[request.resource_name()];
    if (slot) {
      slot->stream_context->TryCancel();
      retired_.push_back(std::move(slot)); // a plugin re-registering replaces its old client
    }
    slot = std::move(client);
  }
  raw->stream_thread = std::thread([this, name = request.resource_name(), raw, generation] {
    runStream(name, *raw, generation);
  });
  changed_.notify_all();
  return grpc::Status::OK;
}

void KubeletSimulator::runStream(const std::string& name, Client& client, int generation) {
  v1beta1::Empty empty;
  auto reader = client.stub->ListAndWatch(client.stream_context.get(), empty);
  v1beta1::ListAndWatchResponse response;
  bool received = false;
  while (reader->Read(&response)) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = clients_.find(name);
      if (view_.generation != generation || it == clients_.end() || it->second.get() != &client) {
        break; // a newer registration or a restart took over this resource
      }
      auto& resource = view_.resources[name];
      resource.devices.assign(response.devices().begin(), response.devices().end());
      resource.lists_received += 1;
      resource.streaming = true;
      received = true;
    }
    changed_.notify_all();
  }
  reader->Finish();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = clients_.find(name);
    if (received && it != clients_.end() && it->second.get() == &client) {
      // PluginDisconnected: devices stay in capacity but none is allocatable.
      for (auto& d : view_.resources[name].devices) {
        d.set_health("Unhealthy");
      }
      view_.resources[name].streaming = false;
    }
  }
  changed_.notify_all();
}

KubeletView KubeletSimulator::view() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return view_;
}

bool KubeletSimulator::waitFor(const std::function<bool(const KubeletView&)>& predicate,
                               std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return predicate(view_); });
}

v1beta1::DevicePlugin::Stub* KubeletSimulator::stubFor(const std::string& resource) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = clients_.find(resource);
  return it == clients_.end() ? nullptr : it->second->stub.get();
}

Result<v1beta1::ContainerAllocateResponse>
KubeletSimulator::allocate(const std::string& resource, const std::vector<std::string>& ids) {
  auto* stub = stubFor(resource);
  if (!stub) {
    return makeError("resource " + resource + " is not registered");
  }
  v1beta1::AllocateRequest request;
  auto* container = request.add_container_requests(); // one container per RPC, as the kubelet
  for (const auto& id : ids) {
    container->add_devices_ids(id);
  }
  grpc::ClientContext context; // the kubelet sets no deadline on Allocate
  v1beta1::AllocateResponse response;
  const grpc::Status status = stub->Allocate(&context, request, &response);
  if (!status.ok()) {
    return makeError(status.error_message());
  }
  if (response.container_responses_size() != 1) {
    return makeError("Allocate answered " + std::to_string(response.container_responses_size()) +
                     " container responses for 1 container request");
  }
  return response.container_responses(0);
}

Result<std::vector<std::string>>
KubeletSimulator::preferredAllocation(const std::string& resource,
                                      const std::vector<std::string>& available,
                                      const std::vector<std::string>& must_include, int32_t size) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = view_.resources.find(resource);
    if (it == view_.resources.end() || !it->second.options.get_preferred_allocation_available()) {
      return makeError("plugin for " + resource + " did not advertise GetPreferredAllocation");
    }
  }
  auto* stub = stubFor(resource);
  if (!stub) {
    return makeError("resource " + resource + " is not registered");
  }
  v1beta1::PreferredAllocationRequest request;
  auto* container = request.add_container_requests();
  for (const auto& id : available) {
    container->add_available_deviceids(id);
  }
  for (const auto& id : must_include) {
    container->add_must_include_deviceids(id);
  }
  container->set_allocation_size(size);
  grpc::ClientContext context;
  v1beta1::PreferredAllocationResponse response;
  const grpc::Status status = stub->GetPreferredAllocation(&context, request, &response);
  if (!status.ok()) {
    return makeError(status.error_message());
  }
  if (response.container_responses_size() != 1) {
    return makeError("GetPreferredAllocation answered " +
                     std::to_string(response.container_responses_size()) + " responses");
  }
  const auto& ids = response.container_responses(0).deviceids();
  return std::vector<std::string>(ids.begin(), ids.end());
}

} // namespace kube_rdma
