// What kubectl reads besides objects: the legacy discovery documents (/api, /apis,
// /apis/{group}, and the APIResourceList of each group version) and the meta.k8s.io/v1 Table
// form of lists that `kubectl get` asks for (Accept: application/json;as=Table;v=v1;g=meta.k8s.io).
// Aggregated discovery (apidiscovery.k8s.io/v2) is not served: kubectl falls back to the legacy
// documents when the answer is plain application/json.
//
// Thread-safety: free functions over values.
#ifndef TWINSCALE_TESTS_FAKE_APISERVER_DISCOVERY_H_
#define TWINSCALE_TESTS_FAKE_APISERVER_DISCOVERY_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "tests/fake_apiserver/resource_type.h"

namespace twinscale::fake_apiserver {

// /api: APIVersions {versions: ["v1"], serverAddressByClientCIDRs}.
nlohmann::json CoreApiVersions(std::string_view server_address);
// /apis: APIGroupList of every non-core group among `types` (versions sorted, the first the
// preferred one).
nlohmann::json ApiGroupList(const std::vector<const ResourceType*>& types);
// /apis/{group}: APIGroup, or null if no type has that group.
nlohmann::json ApiGroup(const std::vector<const ResourceType*>& types, std::string_view group);
// /api/v1 or /apis/{group}/{version}: APIResourceList with the resources, their /status and
// /scale subresources, verbs, short names and categories; null if none serves that version.
nlohmann::json ApiResourceList(const std::vector<const ResourceType*>& types,
                               std::string_view group, std::string_view version);

// Whether an Accept header asks for the Table form (meta.k8s.io/v1 or v1beta1).
bool WantsTable(std::string_view accept);

// `objects` (items of a list, or one object) as a meta.k8s.io/v1 Table: Name, the type's printer
// columns (CRD additionalPrinterColumns with simple .a.b.c paths) and Age, rows carrying the
// object per includeObject ("None", "Metadata" (default) or "Object").
nlohmann::json ToTable(const ResourceType& type, const nlohmann::json& objects,
                       std::string_view list_resource_version, std::string_view include_object,
                       absl::Time now);

// apimachinery's duration.HumanDuration: "45s", "5m30s", "3h", "12d" (what `kubectl get` prints
// as AGE).
std::string HumanDuration(absl::Duration d);

}  // namespace twinscale::fake_apiserver

#endif  // TWINSCALE_TESTS_FAKE_APISERVER_DISCOVERY_H_
