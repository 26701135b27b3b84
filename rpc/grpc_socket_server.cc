#include "rpc/grpc_socket_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace kube_rdma {
namespace {

ino_t inodeOf(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

} // namespace

Result<std::unique_ptr<GrpcSocketServer>>
GrpcSocketServer::start(const std::string& socket_path,
                        const std::vector<grpc::Service*>& services) {
  if (::unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
    return makeError("cannot remove stale socket " + socket_path + ": " + std::strerror(errno));
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  // One completion queue and one poller: a handful of kubelet calls, and idle RSS matters.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
  for (auto* service : services) {
    builder.RegisterService(service);
  }
  auto server = builder.BuildAndStart();
  if (!server) {
    return makeError("cannot serve gRPC on unix socket " + socket_path);
  }
  const ino_t inode = inodeOf(socket_path);
  if (inode == 0) {
    return makeError("gRPC server started but socket " + socket_path + " does not exist");
  }
  return std::unique_ptr<GrpcSocketServer>(
      new GrpcSocketServer(socket_path, std::move(server), inode));
}

GrpcSocketServer::~GrpcSocketServer() {
  // Streams are ended by their services before this; the deadline cancels anything left.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  if (socketPresent()) {
    ::unlink(socket_path_.c_str());
  }
}

bool GrpcSocketServer::socketPresent() const {
  return inodeOf(socket_path_) == inode_;
}

} // namespace kube_rdma
