// rdma-webhook: all behaviour lives in the library.
#include "webhook/run_webhook.h"

int main(int argc, char** argv) {
  return kube_rdma::runWebhook("rdma-webhook", {argv + 1, argv + argc});
}
