// The KubeClient interface; see kube_client.h.
#include "controller/kube/kube_client.h"

namespace twinscale::kube {

KubeClient::~KubeClient() = default;

}  // namespace twinscale::kube
