#include "dra/dra_plugin_service.h"

namespace kube_rdma {

std::vector<std::string> draSupportedVersions() {
  return {"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth"};
}

} // namespace kube_rdma
