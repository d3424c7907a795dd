// FakeApiServer: a FAKE Kubernetes API server for twinscale's tests. It is not Kubernetes.
//
// Why: the operator (controller/kube, controller/reconcile) talks to the Kubernetes API over HTTP,
// and CI can run no real API server (no etcd, no kube-apiserver binary, no network). So the tests
// point the operator's real REST client, and `kubectl` (a real, independent client), at this
// in-process server, which reproduces the API server's WIRE behaviour for the kinds twinscale
// touches: the same URLs, JSON, status codes, Status errors, resourceVersion and watch semantics.
// Each rule below is checked in tests/fake_apiserver/*_test.cc against the documented behaviour
// of the real server (https://kubernetes.io/docs/reference/using-api/api-concepts/), not against
// this implementation's output.
//
// RULES IMPLEMENTED (docs/architecture.md "Kubernetes plumbing"):
//  1. A generic in-memory store over resource paths: /api/v1/namespaces/{ns}/{resource}[/{name}
//     [/{sub}]], /apis/{group}/{version}/namespaces/{ns}/..., cluster-scoped and all-namespace
//     paths without /namespaces/{ns}. Kinds: twinscale.io/v1alpha1 inferenceautoscalers (status;
//     the CRD's schema), apps/v1 deployments and statefulsets (status, scale), v1 pods (status),
//     events, namespaces, events.k8s.io/v1 events, coordination.k8s.io/v1 leases, autoscaling/v2
//     horizontalpodautoscalers (status), keda.sh/v1alpha1 scaledobjects (status); more through
//     Options::crd_files or AddResourceType. One global, monotonically increasing resourceVersion
//     (a decimal string; the first write gets initial_resource_version + 1); metadata.uid,
//     creationTimestamp, namespace and name filled on create; kind and apiVersion on answers;
//     lists are {kind: <Kind>List, apiVersion, metadata: {resourceVersion}, items} (items of
//     built-in kinds without kind/apiVersion, as typed lists are; custom resources with them).
//  2. GET / LIST (labelSelector with =, ==, !=, in, notin, exists, !key, >, <; fieldSelector on
//     metadata.name, metadata.namespace and the kind's documented field labels, 400 otherwise),
//     POST (201; 409 AlreadyExists; generateName), PUT (409 Conflict on a stale
//     metadata.resourceVersion; custom resources must send one, built-in kinds may omit it),
//     PATCH (merge patch RFC 7386, JSON patch RFC 6902, strategic merge patch as a merge patch for
//     built-in kinds and 415 for custom resources; a resourceVersion in the patch is a
//     precondition), DELETE (404 when missing; preconditions; Status Success, or the object for
//     pods), DELETE on a collection. Errors are Status objects {kind: Status, apiVersion: v1,
//     status: Failure, message, reason, details {name, group, kind, causes}, code} with the real
//     server's messages (api_status.h).
//  3. metadata.generation: 1 on create, +1 only when something other than metadata and status
//     changes (for Deployments an annotation change too); a main-resource write keeps the stored
//     status; a /status write changes only status (and resourceVersion, not generation); create
//     drops the status of kinds with a status subresource; kinds without one (events, leases)
//     change as written. Pods have one, as in Kubernetes (a PUT of a Pod keeps its status; a
//     harness sets phases with Put/Mutate or through /status). A write that changes nothing keeps
//     the resourceVersion and sends no event.
//  4. Custom resources with a schema (the InferenceAutoscaler CRD embedded from deploy/crds, and
//     any --crd file) get the schema's defaults on create and update and are validated with the
//     project's own engine (controller/api/openapi_schema.h): 422 Invalid naming the field.
//     Unknown fields are pruned with a `Warning: 299` header (fieldValidation=Warn, the default),
//     dropped (Ignore), or refused with 400 "strict decoding error" (Strict, what kubectl sends).
//     POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions serves a new CRD's kinds from
//     then on, or answers 422 Invalid when its schema is not structural by the real server's
//     rules (the root's metadata restricting anything but name and generateName included);
//     tests/k8s/api_conformance_test.cc runs the same requests against a real kube-apiserver.
//  5. /scale on deployments and statefulsets: autoscaling/v1 Scale {metadata {name, namespace,
//     uid, resourceVersion, creationTimestamp}, spec {replicas, omitted when 0}, status {replicas,
//     selector: spec.selector as a selector string, "app=web,tier in (a,b)"}}; PUT (409 on a
//     stale resourceVersion, 422 for negative replicas) and PATCH set the parent's spec.replicas
//     and bump its generation.
//  6. WATCH (?watch=true|1): HTTP 200, chunked, one JSON event per line {type: ADDED | MODIFIED |
//     DELETED | BOOKMARK | ERROR, object}, written as changes happen (test-checked). From
//     resourceVersion R: every retained change after R, then live ones; from "" or "0": ADDED for
//     the current objects first. History is a bounded window (Options::history_limit) and
//     Compact() drops it: a watch from an older R gets, inside the 200 stream, one ERROR event
//     with Status {code: 410, reason: Expired, message: "too old resource version: R (C)"} and
//     the stream ends (not an HTTP 410). An R the server hasn't reached gets an ERROR with 504
//     "Too large resource version". BOOKMARKs {kind, apiVersion, metadata {resourceVersion}}
//     every bookmark_interval with allowWatchBookmarks=true; timeoutSeconds ends the stream
//     cleanly; label and field selectors apply (an object entering the selection arrives as
//     ADDED, one leaving it as DELETED); sendInitialEvents=true (client-go's WatchList) ends the
//     initial ADDED events with a BOOKMARK annotated k8s.io/initial-events-end. LIST with
//     resourceVersionMatch=Exact (or a legacy limit with a resourceVersion) serves the data as
//     of that RV from the history, and 410 Expired once it has left the window; NotOlderThan and
//     "0" serve current data (the real server does not answer 410 for those).
//  7. coordination.k8s.io/v1 Leases are plain objects with optimistic concurrency.
//  8. Fault injection (below): fail the next N matching requests with a code (Retry-After for
//     429/503), drop open watches cleanly or by cutting the connection, Compact(), Pause() /
//     Resume() to hold requests (client timeouts), a request log, and in-process object access
//     that produces resourceVersions and watch events like any write.
//  9. HTTPS with a given certificate and key, optionally requiring a client certificate signed
//     by a CA (mutual TLS), and `Authorization: Bearer <token>` checked when a token is set (401
//     Status otherwise).
//  Also: /version, /healthz, discovery (/api, /apis, APIResourceList per group version) and
//  meta.k8s.io/v1 Table answers, so `kubectl get deploy` and `kubectl get ias` work against it.
//
// RULES DELIBERATELY NOT IMPLEMENTED (a test needing one needs a real cluster):
//  - Authorization (RBAC), admission (webhooks, quotas, limit ranges), audit, rate limiting
//    (apart from injected 429s), API priority and fairness, OpenAPI documents (/openapi/v2, v3:
//    404), aggregated discovery (apidiscovery.k8s.io: kubectl falls back to the legacy form).
//  - Controllers: nothing creates ReplicaSets or Pods for a Deployment, updates status, garbage-
//    collects owned objects, or runs a kubelet. A test harness plays those parts with Put/Mutate.
//  - Finalizers and graceful deletion (deletes are immediate; deletionTimestamp is never set),
//    propagationPolicy, ownerReferences cascading, namespace lifecycle (any namespace name is
//    accepted without a Namespace object; deleting a namespace deletes nothing else).
//  - Server-side apply (application/apply-patch+yaml gets 415) and managedFields; strategic merge
//    patch's list merging by key and its $patch directives (lists are replaced; directives
//    dropped); YAML, protobuf and CBOR bodies (415) and answers (always JSON); watch events in
//    Table form (`kubectl get -w` prints names and ages only).
//  - Validation of built-in kinds beyond their metadata (a Deployment with a nonsensical spec is
//    stored), built-in defaulting beyond spec.replicas = 1 for Deployments and StatefulSets and a
//    Pending phase for new Pods, conversion between versions (events.k8s.io/v1 and v1 events are
//    separate stores), field selectors beyond each kind's documented labels' plain values.
//  - The watch cache's timing: events are delivered synchronously with the write; bookmarks are
//    periodic rather than at the server's discretion; the history window counts changes, not time.
//  - HTTP/2 (clients fall back to HTTP/1.1; there is no ALPN), client-certificate identities
//    (a certificate signed by the CA is enough; token and certificate are not combined into a
//    user), token review, impersonation.
//
// HTTP server: cpprestsdk's http_listener (the project's HTTP stack). A watch answers with a body
// read from a concurrency::streams::producer_consumer_buffer; the listener sends it chunked and
// each event is flushed (sync()) as it is written, so clients see events as they happen — the
// tests read the first event of a watch before the stream ends. boost::asio directly was not
// needed. cpprest headers stay in fake_apiserver.cc (pimpl).
//
// Thread-safety: every method may be called from any thread while the server runs. Destruction
// (or Stop) ends open watches and answers held (paused) requests with 503 first.
//
// Usage:
//   auto server = FakeApiServer::Start({});            // http://127.0.0.1:<free port>
//   ASSERT_TRUE(server.ok()) << server.status();
//   (*server)->Put("/apis/apps/v1/namespaces/default/deployments/web", deployment_json);
//   client.Get((*server)->url() + "/apis/apps/v1/namespaces/default/deployments/web/scale");
//   (*server)->FailNext({.method = "PATCH", .path_prefix = "/apis/apps/v1", .code = 409});
#ifndef TWINSCALE_TESTS_FAKE_APISERVER_FAKE_APISERVER_H_
#define TWINSCALE_TESTS_FAKE_APISERVER_FAKE_APISERVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "nlohmann/json.hpp"
#include "tests/fake_apiserver/resource_type.h"

namespace twinscale::fake_apiserver {

class FakeApiServer {
 public:
  struct Options {
    std::string address = "127.0.0.1";  // loopback only in tests
    int port = 0;                       // 0: a free port (see port())
    // HTTPS when both are set: PEM certificate chain and private key files.
    std::string tls_cert_file;
    std::string tls_key_file;
    // With HTTPS: require a client certificate signed by this PEM CA (the TLS handshake fails
    // without one). Empty: no client certificate is asked for.
    std::string client_ca_file;
    // Non-empty: every request must carry `Authorization: Bearer <token>`, else 401 Unauthorized.
    std::string bearer_token;
    // CustomResourceDefinition files to serve besides the built-in kinds; a CRD for a resource
    // already served (e.g. deploy/crds/twinscale.io_inferenceautoscalers.yaml) replaces it.
    std::vector<std::string> crd_files;
    // Changes kept for watches and Exact lists (the "compaction window").
    size_t history_limit = 10000;
    // resourceVersions start above this (real clusters never start at 1).
    int64_t initial_resource_version = 1000;
    // How often watches with allowWatchBookmarks=true get a BOOKMARK.
    absl::Duration bookmark_interval = absl::Seconds(1);
    // Length of a watch without timeoutSeconds.
    absl::Duration default_watch_timeout = absl::Minutes(30);
    // creationTimestamp, table ages, watch timeouts and bookmarks; null means real time. Not owned;
    // must outlive the server.
    const Clock* clock = nullptr;
  };

  // Starts serving. InvalidArgument for unreadable CRD, certificate or key files; Unavailable if
  // the address can't be bound.
  static absl::StatusOr<std::unique_ptr<FakeApiServer>> Start(Options options);

  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // Stops serving (idempotent): open watches end cleanly, held requests get 503.
  void Stop();

  // "http://127.0.0.1:43117" or "https://...", without a trailing slash.
  std::string url() const;
  int port() const;

  // ---- Objects, in process (no HTTP, no auth, no faults) --------------------------------------
  // `path` is an API path as a client would use it: "/api/v1/namespaces/default/pods/web-0",
  // "/apis/apps/v1/namespaces/default/deployments/web". Errors are the HTTP layer's Status
  // errors (api_status.h): NotFound for a missing object or an unserved path.
  absl::StatusOr<nlohmann::json> Get(std::string_view path) const;
  // A collection path ("/apis/apps/v1/namespaces/default/deployments", or without the namespace
  // for all namespaces), as a List object; `label_selector` in the query-parameter syntax.
  absl::StatusOr<nlohmann::json> List(std::string_view collection_path,
                                      std::string_view label_selector = "") const;
  // Creates or replaces the object at `path` exactly as given: no resourceVersion precondition,
  // no status or schema rules (so a harness can set a Deployment's status or a Pod's phase).
  // kind, apiVersion, name and namespace come from the path; uid and creationTimestamp are kept
  // (or made for a new object); generation is kept and bumped when anything but metadata and
  // status changed. Produces a new resourceVersion and an ADDED or MODIFIED watch event, unless
  // nothing changed. Answers the stored object.
  absl::StatusOr<nlohmann::json> Put(std::string_view path, nlohmann::json object);
  // Read-modify-write of the object at `path` under the store's lock, then the Put rules.
  // NotFound if missing. `mutate` must not call back into the server.
  absl::StatusOr<nlohmann::json> Mutate(std::string_view path,
                                        const std::function<void(nlohmann::json&)>& mutate);
  // Deletes the object at `path` (a DELETED event). NotFound if missing.
  absl::Status Delete(std::string_view path);
  // The newest resourceVersion.
  int64_t ResourceVersion() const;

  // Serves another kind (e.g. a CRD's) from now on.
  void AddResourceType(ResourceType type);
  // Serves every CustomResourceDefinition in `yaml`. InvalidArgument for a bad CRD.
  absl::Status LoadCrd(std::string_view yaml, std::string_view where = "crd");

  // ---- Faults ---------------------------------------------------------------------------------
  struct Fault {
    std::string method;       // "GET", "PATCH", ...; "" matches any method
    std::string path_prefix;  // matched against the request path ("" matches every path)
    int code = 500;           // 500, 503, 409, 429, 410, 504, ...
    int count = 1;            // how many matching requests fail
    // 429 / 503: a Retry-After header and details.retryAfterSeconds (0: none).
    int retry_after_seconds = 0;
    // The Status message ("" gives "injected fault: <code>").
    std::string message;
  };
  // The next `count` requests matching `fault` (after authentication) fail with a Status error
  // of `code` and the reason the real server uses for it (InternalError, ServiceUnavailable,
  // TooManyRequests, Conflict, Expired, Timeout, ...). Watch requests fail before the stream
  // starts. Faults are checked in the order added; each request consumes at most one.
  void FailNext(Fault fault);
  void ClearFaults();
  // Ends every open watch: cleanly (the chunked body ends) or `abrupt` (the connection is cut
  // mid-body, as a crashed server or proxy would).
  void CloseWatches(bool abrupt = false);
  size_t OpenWatches() const;
  // Waits until at least `n` watches are open; false on timeout.
  bool WaitForWatches(size_t n, absl::Duration timeout) const;
  // Drops the whole history: watches and Exact lists from any older resourceVersion get 410.
  void Compact();
  // While paused, requests are accepted and logged but not answered; Resume() answers them in
  // arrival order. Open watch streams keep flowing.
  void Pause();
  void Resume();
  // Changes the accepted bearer token ("" turns token checking off), e.g. to test token rotation.
  void SetBearerToken(std::string token);

  // ---- Request log ----------------------------------------------------------------------------
  struct LoggedRequest {
    std::string method;
    std::string path;                           // as sent (percent-encoded)
    std::string query;                          // the query string as sent, without '?'
    std::map<std::string, std::string> params;  // the same, decoded
    std::string content_type;
    std::string body;
    std::map<std::string, std::string> headers;  // names in lower case
  };
  // Every request received (also rejected and held ones), oldest first.
  std::vector<LoggedRequest> Requests() const;
  void ClearRequests();

  struct Impl;  // defined in fake_apiserver.cc

 private:
  explicit FakeApiServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace twinscale::fake_apiserver

#endif  // TWINSCALE_TESTS_FAKE_APISERVER_FAKE_APISERVER_H_
