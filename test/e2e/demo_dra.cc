#include "test/e2e/demo_dra.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "common/pools/nccl_settings.h"
#include "common/util/strings.h"
#include "common/node/sysfs_discovery.h"
#include "common/node/topology.h"
#include "dra/claim_rendering.h"
#include "dra/resource_slice.h"
#include "dra/v1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "test/plugin/test_files.h"
#include "test/yaml_documents.h"

namespace kube_rdma {
namespace {

using json = nlohmann::json;
namespace dra = k8s::io::kubelet::pkg::apis::dra::v1;

// The GPU the claim's pod is given: one on the node's second PCIe root, so that the NIC the
// constraint picks is not merely the first port of the slice.
constexpr size_t kDraGpu = 4;

} // namespace

bool DraDemo::startDriver() {
  report_.section("rdma-dra-driver publishes the node's ResourceSlice (DRA, Kubernetes 1.34+)");
  dra_dir_ = setup_.work_dir + "/dra";
  std::filesystem::create_directories(dra_dir_);
  api_ = std::make_unique<SimulatedApi>();
  const std::string api_failure = api_->start();
  if (!report_.check(api_failure.empty(),
                     "API-server simulator serving " +
                         (api_failure.empty() ? api_->simulator().url() : api_failure))) {
    return false;
  }
  api_->simulator().put("nodes", {{"metadata", {{"name", setup_.node_name}}}});
  driver_ = startProgram(report_, setup_.binary_dir + "/dra/rdma-dra-driver",
                         {"--node-name", setup_.node_name, "--kubeconfig", api_->writeKubeconfig(),
                          "--sysfs-root", setup_.node_dir + "/sys", "--proc-root",
                          setup_.node_dir + "/proc", "--dev-root", setup_.node_dir + "/dev",
                          "--plugin-registry-dir", dra_dir_ + "/plugins_registry", "--plugin-dir",
                          dra_dir_ + "/plugins/" + kDraDriverName, "--cdi-dir", dra_dir_ + "/cdi",
                          "--state-dir", dra_dir_ + "/state"},
                         setup_.work_dir + "/rdma-dra-driver.log", child_);
  if (!driver_) {
    return false;
  }
  if (!report_.check(
          waitUntil(
              [&] { return driver_->logs().find("serving the kubelet") != std::string::npos; },
              kDeadline),
          "rdma-dra-driver serving the kubelet")) {
    report_.block(driver_->logs());
    return false;
  }
  // What the kubelet's plugin watcher does with the socket that appeared in plugins_registry.
  auto registration = pluginregistration::Registration::NewStub(
      grpc::CreateChannel("unix:" + dra_dir_ + "/plugins_registry/" + kDraDriverName + "-reg.sock",
                          grpc::InsecureChannelCredentials()));
  pluginregistration::PluginInfo info;
  grpc::ClientContext info_context;
  const bool answered =
      registration->GetInfo(&info_context, pluginregistration::InfoRequest(), &info).ok();
  report_.check(
      answered && info.type() == "DRAPlugin" && info.name() == kDraDriverName &&
          info.supported_versions_size() > 0 && info.supported_versions(0) == "v1.DRAPlugin",
      "GetInfo: DRAPlugin " + info.name() + ", endpoint " + info.endpoint() + ", versions " +
          joinStrings({info.supported_versions().begin(), info.supported_versions().end()}, ", "));
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse status_reply;
  grpc::ClientContext status_context;
  report_.check(registration->NotifyRegistrationStatus(&status_context, status, &status_reply).ok(),
                "NotifyRegistrationStatus(registered) accepted");

  std::vector<json> slices;
  waitUntil(
      [&] {
        slices = api_->simulator().objects("resourceslices");
        return !slices.empty();
      },
      kDeadline);
  if (!report_.check(slices.size() == 1, std::to_string(slices.size()) +
                                             " ResourceSlice in the API for node " +
                                             setup_.node_name)) {
    report_.block(driver_->logs());
    return false;
  }
  const json& spec = slices[0]["spec"];
  report_.line("ResourceSlice " + slices[0]["metadata"].value("name", "") + ": driver " +
               spec.value("driver", "") + ", nodeName " + spec.value("nodeName", "") + ", pool " +
               spec.value("/pool/name"_json_pointer, "") + " generation " +
               std::to_string(spec.value("/pool/generation"_json_pointer, 0)));
  slice_ = sliceDevices(slices[0]);
  std::vector<std::vector<std::string>> rows;
  for (const SliceDevice& d : slice_) {
    rows.push_back({d.name, d.rdma_device, d.netdev, d.link_layer, d.state, d.pcie_root});
  }
  report_.block(formatTable({"DEVICE", "rdmaDevice", "netdev", "linkLayer", "state", "pcieRoot"},
                            rows, kIndent));
  report_.line("(and rateGbps, ipv4, gidIndex, numaNode, firmware, hcaType, PCI ids, pciBusID)");
  std::set<std::string> published;
  bool roots = true;
  for (const SliceDevice& d : slice_) {
    published.insert(d.rdma_device);
    roots = roots && d.pcie_root.rfind("pci0000:", 0) == 0;
  }
  report_.check(slice_.size() == 8 && published.count("mlx5_0") == 0,
                "8 devices, one per data port (mlx5_1..mlx5_8); the management NIC left out");
  report_.check(roots, "each device has resource.kubernetes.io/pcieRoot, as GPU drivers publish");
  return true;
}

void DraDemo::gpuClaim() {
  report_.section("A claim for a GPU and the NIC on its PCIe root (examples/dra/gpu-with-nic"
                  ".yaml): NodePrepareResources and the claim's CDI spec");
  auto documents =
      parseYamlDocuments(readTestFile(setup_.source_dir + "/examples/dra/gpu-with-nic.yaml"));
  const std::vector<json> objects = documents.ok() ? *documents : std::vector<json>{};
  const auto kind = [&](const std::string& wanted) -> const json* {
    for (const json& d : objects) {
      if (d.value("kind", "") == wanted) {
        return &d;
      }
    }
    return nullptr;
  };
  const json* claim_template = kind("ResourceClaimTemplate");
  const json* pod = kind("Pod");
  if (!report_.check(claim_template != nullptr && pod != nullptr,
                     "examples/dra/gpu-with-nic.yaml: a ResourceClaimTemplate and a Pod" +
                         (documents.ok() ? "" : ": " + documents.error().message))) {
    return;
  }
  // The GPUs as NVIDIA's DRA driver publishes them: gpu-N with the same pcieRoot attribute.
  const NodeTopology node =
      discoverFromSysfs(DiscoveryRoots{setup_.node_dir + "/sys", setup_.node_dir + "/proc"});
  if (!report_.check(node.gpus.size() > kDraGpu,
                     std::to_string(node.gpus.size()) + " GPUs on the node (gpu.nvidia.com)")) {
    return;
  }
  std::map<std::string, std::vector<std::string>> gpus_by_root;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    gpus_by_root[rootComplexOf(node.gpus[i].pcie_path)].push_back("gpu-" + std::to_string(i));
  }
  for (const auto& [root, gpus] : gpus_by_root) {
    report_.line("pcieRoot " + root + ": " + joinStrings(gpus, ", "));
  }
  const std::string gpu = "gpu-" + std::to_string(kDraGpu);
  const std::string root = rootComplexOf(node.gpus[kDraGpu].pcie_path);
  const std::vector<SliceDevice> candidates = roceDevicesOnRoot(slice_, root);
  std::vector<std::string> candidate_names;
  candidate_names.reserve(candidates.size());
  for (const SliceDevice& d : candidates) {
    candidate_names.push_back(d.rdma_device);
  }
  report_.line("the scheduler gives request gpu " + gpu + " (" + node.gpus[kDraGpu].pci_address +
               ", pcieRoot " + root + "); request nic (roce.rdma.kube-rdma.io) under");
  report_.line("matchAttribute resource.kubernetes.io/pcieRoot may then take " +
               joinStrings(candidate_names, ", ") + "; it takes the first free one");
  if (!report_.check(!candidates.empty(), "a RoCE port on the GPU's PCIe root")) {
    return;
  }
  const SliceDevice& nic = candidates.front();
  const json pod_claim = pod->value("/spec/resourceClaims/0"_json_pointer, json::object());
  const json claim = api_->simulator().put(
      "resourceclaims",
      allocatedClaim(*claim_template,
                     {pod->value("/metadata/name"_json_pointer, ""),
                      "9c0d7e2a-demo-pod-uid",
                      pod_claim.value("name", ""),
                      setup_.node_name,
                      {{"gpu", "gpu.nvidia.com", gpu}, {"nic", kDraDriverName, nic.name}}}));
  claim_uid_ = claim["metadata"].value("uid", "");
  claim_nic_ = nic.rdma_device;
  const std::string ns = claim["metadata"].value("namespace", "");
  const std::string name = claim["metadata"].value("name", "");
  report_.line("ResourceClaim " + ns + "/" + name + " (uid " + claim_uid_ + "), allocated: gpu " +
               gpu + ", nic " + nic.name + " (" + nic.rdma_device + ", " + nic.netdev +
               ", pcieRoot " + nic.pcie_root + ")");
  report_.check(nic.pcie_root == root && nic.link_layer == "Ethernet",
                "the NIC is a RoCE port on the GPU's pcieRoot " + root);

  // The kubelet's call once the pod is bound to the node.
  auto stub = dra::DRAPlugin::NewStub(
      grpc::CreateChannel("unix:" + dra_dir_ + "/plugins/" + kDraDriverName + "/dra.sock",
                          grpc::InsecureChannelCredentials()));
  dra::NodePrepareResourcesRequest request;
  auto* wanted = request.add_claims();
  wanted->set_namespace_(ns);
  wanted->set_name(name);
  wanted->set_uid(claim_uid_);
  dra::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  const bool called = stub->NodePrepareResources(&context, request, &response).ok();
  const auto answer = response.claims().find(claim_uid_);
  if (!report_.check(called && answer != response.claims().end() && answer->second.error().empty(),
                     "NodePrepareResources for " + name + " answered without error" +
                         (answer != response.claims().end() && !answer->second.error().empty()
                              ? ": " + answer->second.error()
                              : ""))) {
    report_.block(driver_->logs());
    return;
  }
  for (const auto& d : answer->second.devices()) {
    report_.line("device: request " +
                 joinStrings({d.request_names().begin(), d.request_names().end()}, ",") +
                 ", pool " + d.pool_name() + ", device " + d.device_name() + ", CDI " +
                 joinStrings({d.cdi_device_ids().begin(), d.cdi_device_ids().end()}, ","));
  }
  report_.check(answer->second.devices_size() == 1 &&
                    answer->second.devices(0).device_name() == nic.name,
                "one device in the answer: the NIC (the GPU is NVIDIA's driver's to prepare)");

  const std::string spec_path = claimCdiSpecPath(dra_dir_ + "/cdi", claim_uid_);
  const json spec = json::parse(readTestFile(spec_path), nullptr, false);
  if (!report_.check(spec.is_object(), "CDI spec " + spec_path)) {
    return;
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> device_nodes;
  const auto addEdits = [&](const json& edits, const std::string& scope) {
    for (const json& n : edits.value("deviceNodes", json::array())) {
      device_nodes.push_back(n.value("path", ""));
      rows.push_back({scope, "deviceNode", n.value("path", "")});
    }
    for (const json& e : edits.value("env", json::array())) {
      rows.push_back({scope, "env", e.get<std::string>()});
    }
    for (const json& m : edits.value("mounts", json::array())) {
      if (m.value("containerPath", "") == "/etc/nccl.conf") {
        claim_nccl_conf_ = m.value("hostPath", "");
      }
      rows.push_back({scope, "mount",
                      m.value("containerPath", "") + " <- " + m.value("hostPath", "") + " (" +
                          joinStrings(m.value("options", std::vector<std::string>{}), ",") + ")"});
    }
    for (const json& h : edits.value("hooks", json::array())) {
      rows.push_back({scope, "hook", h.value("hookName", "") + ": " + h.value("path", "")});
    }
  };
  for (const json& d : spec.value("devices", json::array())) {
    // Device names are "<claim uid>-<DRA device name>".
    const std::string device = d.value("name", "");
    addEdits(d.value("containerEdits", json::object()),
             "device <uid>-" + device.substr(std::min(device.size(), claim_uid_.size() + 1)));
  }
  addEdits(spec.value("containerEdits", json::object()), "claim");
  report_.line("kind " + spec.value("kind", "") + ", cdiVersion " + spec.value("cdiVersion", ""));
  report_.block(formatTable({"EDIT OF", "KIND", "VALUE"}, rows, kIndent));

  const RdmaDevice* hca = node.findDevice(nic.rdma_device);
  const std::string uverbs = hca != nullptr ? hca->uverbsDevicePath() : "";
  std::string env_text;
  for (const json& e : spec.value("/containerEdits/env"_json_pointer, json::array())) {
    env_text += e.get<std::string>() + "\n";
  }
  report_.check(std::count(device_nodes.begin(), device_nodes.end(), "/dev/infiniband/rdma_cm") ==
                        1 &&
                    device_nodes.size() == 2 && !uverbs.empty() &&
                    std::count(device_nodes.begin(), device_nodes.end(), uverbs) == 1,
                "device nodes: rdma_cm and " + nic.rdma_device + "'s " + uverbs + ", nothing else");
  report_.check(env_text.find("KUBE_RDMA_DEVICES=" + nic.rdma_device + "\n") != std::string::npos &&
                    env_text.find("NCCL_") == std::string::npos,
                "env: KUBE_RDMA_DEVICES=" + nic.rdma_device +
                    ", no NCCL_* (they would replace the pod's own values)");
  report_.check(!claim_nccl_conf_.empty(), "nccl.conf mounted at /etc/nccl.conf");
}

void DraDemo::claimNcclConf() {
  report_.section("NCCL reads the claim's nccl.conf (only the claim's NIC)");
  if (!report_.check(!claim_nccl_conf_.empty(), "the claim's nccl.conf: " + claim_nccl_conf_)) {
    return;
  }
  const NcclEnv conf = parseNcclConf(readTestFile(claim_nccl_conf_));
  const auto hca = std::find_if(conf.begin(), conf.end(),
                                [](const auto& kv) { return kv.first == "NCCL_IB_HCA"; });
  report_.check(hca != conf.end() && hca->second == "=" + claim_nic_ + ":1",
                "NCCL_IB_HCA names exactly the claim's port: =" + claim_nic_ + ":1");
  showNcclReading(report_, setup_.work_dir + "/nccl-dra", claim_nccl_conf_);
}

void DraDemo::stop() {
  stopProgram(driver_, child_, "rdma-dra-driver");
  api_.reset();
}

} // namespace kube_rdma
