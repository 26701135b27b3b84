#pragma once

#include <string>
#include <vector>

#include "webhook/admission_server.h"

namespace kube_rdma {

// The whole process around AdmissionServer: the flags (usage on stderr and exit code 2 when
// they are wrong), the descriptor limit, the certificate and policy stores with their file
// watches, the optional plain-HTTP metrics listener and the signal thread that drains on SIGTERM.
// Returns the exit code.
int runWebhook(const std::string& program, const std::vector<std::string>& args);

} // namespace kube_rdma
