// The InferenceAutoscaler loader: YAML documents -> (object shape, schema defaults, schema
// validation, conversion, cross-field checks) -> InferenceAutoscaler. The schema work is done by
// OpenApiSchema on the CRD embedded at build time (the generated inference_autoscaler_crd.cc);
// this file knows the object's envelope, the typed conversion and the rules that span fields.
// yaml-cpp throws: every call into it is inside a try block here or in the schema engine.
#include "controller/api/spec_loader.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "controller/api/openapi_schema.h"
#include "controller/api/scaling_rules.h"
#include "controller/api/spec.h"
#include "controller/api/yaml_documents.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::api {
namespace {

// abseil 20220623 as Debian builds it has its own string_view (not std::string_view).
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// A document may not expand (YAML aliases included) to more nodes than this: an alias bomb of a few
// hundred bytes would otherwise cost exponential time and memory to validate and copy. Real
// manifests have a few hundred nodes.
constexpr size_t kMaxNodesPerDocument = 100000;

// spec.slo.target.window: at most a week (the schema can bound a number, not a duration).
constexpr absl::Duration kMaxTargetWindow = absl::Hours(7 * 24);

// The fields of Kubernetes' ObjectMeta an InferenceAutoscaler manifest may carry, as a schema, so
// metadata gets the same checks and messages as spec. The API server validates metadata itself
// (the CRD's schema can't restrict it), with the rules written here: name is a DNS-1123 subdomain,
// namespace a DNS-1123 label. Output of `kubectl get -o yaml` (creationTimestamp, managedFields,
// ...) is accepted.
constexpr char kObjectMetaSchema[] = R"yaml(
type: object
required: [name]
properties:
  name:
    type: string
    minLength: 1
    maxLength: 253
    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'
  namespace:
    type: string
    maxLength: 63
    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
  uid: {type: string}
  generation: {type: integer, format: int64, minimum: 0}
  resourceVersion: {type: string}
  labels: {type: object, additionalProperties: {type: string}}
  annotations: {type: object, additionalProperties: {type: string}}
  generateName: {type: string}
  selfLink: {type: string}
  creationTimestamp: {type: string, nullable: true}
  deletionTimestamp: {type: string, nullable: true}
  deletionGracePeriodSeconds: {type: integer, nullable: true}
  finalizers: {type: array, items: {type: string}}
  ownerReferences:
    type: array
    items: {type: object, x-kubernetes-preserve-unknown-fields: true}
  managedFields:
    type: array
    items: {type: object, x-kubernetes-preserve-unknown-fields: true}
)yaml";

struct Schemas {
  OpenApiSchema spec;
  OpenApiSchema metadata;
};

absl::StatusOr<Schemas> BuildSchemas() {
  try {
    const YAML::Node crd = YAML::Load(std::string(InferenceAutoscalerCrdYaml()));
    absl::StatusOr<OpenApiSchema> root = CrdVersionSchema(crd, kInferenceAutoscalerVersion);
    if (!root.ok()) return root.status();
    if (absl::Status s = root->CheckStructural(); !s.ok()) return s;
    std::optional<OpenApiSchema> spec = root->Property("spec");
    if (!spec) return absl::InternalError("the CRD's schema has no spec");
    absl::StatusOr<OpenApiSchema> metadata = OpenApiSchema::FromYaml(YAML::Load(kObjectMetaSchema));
    if (!metadata.ok()) return metadata.status();
    return Schemas{*std::move(spec), *std::move(metadata)};
  } catch (const YAML::Exception& e) {
    return absl::InternalError(e.what());
  }
}

// Parsed once; immutable afterwards (function-local static initialization is thread-safe).
const absl::StatusOr<Schemas>& GetSchemas() {
  static const auto* const kSchemas = new absl::StatusOr<Schemas>(BuildSchemas());
  return *kSchemas;
}

// One document of the input: the input's name, and where the document starts in it (each document
// is parsed on its own, so yaml-cpp's marks count from its first line).
struct Source {
  std::string_view name;
  int first_line = 0;  // 0-based line of the input where the document starts
};

// "source:12: " (1-based line of the whole input; yaml-cpp's marks are 0-based and per document),
// or "source: " without a mark.
std::string Where(const Source& source, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return absl::StrCat(Sv(source.name), ": ");
  return absl::StrCat(Sv(source.name), ":", source.first_line + mark.line + 1, ": ");
}

using Piece = api::YamlPiece;

// Problems found in one object, each with its place in the input.
class Problems {
 public:
  explicit Problems(const Source& source) : source_(source) {}

  void Add(const YAML::Mark& mark, std::string_view field, std::string_view message) {
    lines_.push_back(absl::StrCat(Where(source_, mark), field.empty() ? "" : Sv(field),
                                  field.empty() ? "" : ": ", Sv(message)));
  }
  // Errors about the field `top` of object `obj` (the parsed input, for marks). Locating from the
  // object makes a field missing directly under `top` point at the line of `top:` itself.
  void AddAll(const std::vector<FieldError>& errors, const YAML::Node& obj, std::string_view top) {
    for (const FieldError& e : errors) {
      std::vector<PathElement> path = {
          PathElement{PathElement::Kind::kProperty, std::string(top), 0}};
      path.insert(path.end(), e.path.begin(), e.path.end());
      Add(LocatePath(obj, path), e.field, e.message);
    }
  }
  bool empty() const { return lines_.empty(); }
  absl::Status ToStatus() const { return absl::InvalidArgumentError(absl::StrJoin(lines_, "\n")); }

 private:
  Source source_;
  std::vector<std::string> lines_;
};

// m[key], or a null node when m is not a mapping or has no such key. yaml-cpp's own const
// operator[] returns an invalid node for a missing key, on which IsScalar() and friends throw.
YAML::Node Get(const YAML::Node& m, const char* key) {
  if (!m.IsDefined() || !m.IsMap()) return YAML::Node();
  YAML::Node v = m[key];
  if (!v.IsDefined()) return YAML::Node();
  return v;
}

JsonScalar::Kind KindOf(const YAML::Node& n) { return ResolveScalar(n).kind; }
bool Present(const YAML::Node& n) {
  return n.IsDefined() && !n.IsNull() && !(n.IsScalar() && KindOf(n) == JsonScalar::Kind::kNull);
}
// An integer the schema has checked (written 3 or 3.0).
int64_t IntOf(const YAML::Node& n) {
  const JsonScalar j = ResolveScalar(n);
  return j.kind == JsonScalar::Kind::kInteger ? j.integer : static_cast<int64_t>(j.number);
}

std::string Text(const YAML::Node& n) {
  return n.IsDefined() && n.IsScalar() ? n.Scalar() : std::string();
}

// Counts `root`'s nodes with aliases expanded, stopping once past `limit`.
size_t CountNodes(const YAML::Node& root, size_t limit) {
  size_t count = 0;
  std::vector<YAML::Node> stack;
  stack.push_back(root);
  while (!stack.empty() && count <= limit) {
    YAML::Node n;
    n.reset(stack.back());
    stack.pop_back();
    ++count;
    if (n.IsMap()) {
      for (const auto& e : n) {
        stack.push_back(e.first);
        stack.push_back(e.second);
      }
    } else if (n.IsSequence()) {
      for (const auto& item : n) stack.push_back(item);
    }
  }
  return count;
}

// The first entry of map `m` named `key` (the node, and its key's mark), if any.
struct Entry {
  YAML::Node value;
  YAML::Mark mark = YAML::Mark::null_mark();
  bool found = false;
};
Entry Find(const YAML::Node& m, std::string_view key) {
  Entry out;
  if (!m.IsMap()) return out;
  for (const auto& e : m) {
    if (e.first.IsScalar() && e.first.Scalar() == key) {
      out.value.reset(e.second);
      out.mark = e.first.Mark();
      out.found = true;
      return out;
    }
  }
  return out;
}

// ---- Typed conversion of a defaulted, validated spec ----------------------------------------

using Path = std::vector<PathElement>;

Path P(std::initializer_list<std::string_view> names) {
  Path out;
  for (std::string_view n : names) {
    out.push_back(PathElement{PathElement::Kind::kProperty, std::string(n), 0});
  }
  return out;
}

// Reads what the schema has already checked, so shapes and types are known to be right; a field
// the schema defaults is always present. Records the problems only conversion or cross-field
// checks can find, with their paths.
class SpecConverter {
 public:
  explicit SpecConverter(std::vector<FieldError>& errors) : errors_(errors) {}

  InferenceAutoscalerSpec Convert(const YAML::Node& s) {
    InferenceAutoscalerSpec spec;
    const YAML::Node& t = Get(s, "targetRef");
    spec.target_ref =
        TargetRef{Text(Get(t, "apiVersion")), Text(Get(t, "kind")), Text(Get(t, "name"))};
    if (Present(Get(s, "mode"))) spec.mode = ModeOf(Text(Get(s, "mode")));
    if (Present(Get(s, "minReplicas"))) spec.min_replicas = Int32(Get(s, "minReplicas"));
    spec.max_replicas = Int32(Get(s, "maxReplicas"));
    if (spec.max_replicas < spec.min_replicas) {
      Error(P({"maxReplicas"}), absl::StrCat("must be >= spec.minReplicas (", spec.min_replicas,
                                             "), got ", spec.max_replicas));
    }
    ConvertModel(Get(s, "model"), spec.model);
    if (Present(Get(s, "routing"))) spec.routing = RoutingOf(Text(Get(s, "routing")));
    if (Present(Get(s, "slo"))) ConvertSlo(Get(s, "slo"), spec.slo);
    if (Present(Get(s, "scaleUp"))) ConvertRules(Get(s, "scaleUp"), spec.scale_up);
    if (const YAML::Node& d = Get(s, "scaleDown"); Present(d)) {
      ConvertRules(d, spec.scale_down.rules);
      if (Present(Get(d, "safetyMargin")))
        spec.scale_down.safety_margin = Number(Get(d, "safetyMargin"));
      if (Present(Get(d, "clearlySafeWindow"))) {
        spec.scale_down.clearly_safe_window =
            Duration(Get(d, "clearlySafeWindow"), P({"scaleDown", "clearlySafeWindow"}));
      }
    }
    if (const YAML::Node& l = Get(s, "limits"); Present(l)) {
      if (Present(Get(l, "queueDepthPerReplica"))) {
        spec.limits.queue_depth_per_replica = Number(Get(l, "queueDepthPerReplica"));
      }
      if (Present(Get(l, "kvCacheUtilization"))) {
        spec.limits.kv_cache_utilization = Number(Get(l, "kvCacheUtilization"));
      }
      if (Present(Get(l, "enforceOnScaleUp"))) {
        spec.limits.enforce_on_scale_up = Bool(Get(l, "enforceOnScaleUp"));
      }
    }
    if (const YAML::Node& w = Get(s, "warmup"); Present(w) && Present(Get(w, "expected"))) {
      spec.warmup.expected = Duration(Get(w, "expected"), P({"warmup", "expected"}));
      Positive(*spec.warmup.expected, P({"warmup", "expected"}));
    }
    if (const YAML::Node& a = Get(s, "admission"); Present(a)) {
      if (Present(Get(a, "enabled"))) spec.admission.enabled = Bool(Get(a, "enabled"));
      if (Present(Get(a, "maxQueuePerReplica"))) {
        spec.admission.max_queue_per_replica = Int32(Get(a, "maxQueuePerReplica"));
      }
    }
    if (Present(Get(s, "metrics"))) ConvertMetrics(Get(s, "metrics"), spec.metrics);
    return spec;
  }

 private:
  void Error(Path path, std::string message) {
    std::string field = FormatPath("spec", path);
    errors_.push_back(FieldError{std::move(path), std::move(field), std::move(message)});
  }

  static int64_t Int(const YAML::Node& n) { return IntOf(n); }
  static int32_t Int32(const YAML::Node& n) { return static_cast<int32_t>(IntOf(n)); }
  static double Number(const YAML::Node& n) { return ResolveScalar(n).number; }
  static bool Bool(const YAML::Node& n) { return ResolveScalar(n).boolean; }

  absl::Duration Duration(const YAML::Node& n, const Path& path) {
    absl::Duration d;
    if (!absl::ParseDuration(Text(n), &d) || d == absl::InfiniteDuration() ||
        d < absl::ZeroDuration()) {
      Error(path, absl::StrCat("not a representable duration: \"", Text(n), "\""));
      return absl::ZeroDuration();
    }
    return d;
  }
  void Positive(absl::Duration d, const Path& path) {
    if (d <= absl::ZeroDuration()) Error(path, "must be longer than 0");
  }

  static Mode ModeOf(std::string_view s) {
    if (s == "Direct") return Mode::kDirect;
    if (s == "KEDA") return Mode::kKeda;
    if (s == "HPA") return Mode::kHpa;
    return Mode::kRecommend;
  }
  static Routing RoutingOf(std::string_view s) {
    if (s == "RoundRobin") return Routing::kRoundRobin;
    if (s == "LeastRequests") return Routing::kLeastRequests;
    if (s == "PrefixAware") return Routing::kPrefixAware;
    return Routing::kRandom;
  }

  void ConvertModel(const YAML::Node& m, ModelSpec& model) {
    model.profile = Text(Get(m, "profile"));
    if (Present(Get(m, "tensorParallel"))) model.tensor_parallel = Int32(Get(m, "tensorParallel"));
    if (Present(Get(m, "maxNumSeqs"))) model.max_num_seqs = Int32(Get(m, "maxNumSeqs"));
    if (Present(Get(m, "maxNumBatchedTokens"))) {
      model.max_num_batched_tokens = Int32(Get(m, "maxNumBatchedTokens"));
    }
    if (Present(Get(m, "gpuMemoryUtilization"))) {
      model.gpu_memory_utilization = Number(Get(m, "gpuMemoryUtilization"));
    }
    if (Present(Get(m, "blockSize"))) model.block_size = Int32(Get(m, "blockSize"));
    if (Present(Get(m, "maxModelLen"))) model.max_model_len = Int32(Get(m, "maxModelLen"));
  }

  void ConvertSlo(const YAML::Node& s, SloSpec& slo) {
    if (const YAML::Node& t = Get(s, "ttft"); Present(t)) {
      if (Present(Get(t, "threshold"))) {
        slo.ttft.threshold = Duration(Get(t, "threshold"), P({"slo", "ttft", "threshold"}));
        Positive(slo.ttft.threshold, P({"slo", "ttft", "threshold"}));
      }
      if (Present(Get(t, "percentile"))) slo.ttft.percentile = Number(Get(t, "percentile"));
      if (Present(Get(t, "perPromptToken"))) {
        slo.ttft.per_prompt_token =
            Duration(Get(t, "perPromptToken"), P({"slo", "ttft", "perPromptToken"}));
      }
      if (Present(Get(t, "surplusWindow"))) {
        slo.ttft.surplus_window =
            Duration(Get(t, "surplusWindow"), P({"slo", "ttft", "surplusWindow"}));
      }
    }
    if (const YAML::Node& i = Get(s, "itl"); Present(i)) {
      ItlObjective itl;
      itl.threshold = Duration(Get(i, "threshold"), P({"slo", "itl", "threshold"}));
      Positive(itl.threshold, P({"slo", "itl", "threshold"}));
      if (Present(Get(i, "percentile"))) itl.percentile = Number(Get(i, "percentile"));
      slo.itl = itl;
    }
    if (const YAML::Node& t = Get(s, "target"); Present(t)) {
      if (Present(Get(t, "requests"))) slo.target.requests = Number(Get(t, "requests"));
      if (Present(Get(t, "minutes"))) slo.target.minutes = Number(Get(t, "minutes"));
      if (Present(Get(t, "window"))) {
        const Path path = P({"slo", "target", "window"});
        slo.target.window = Duration(Get(t, "window"), path);
        Positive(slo.target.window, path);
        if (slo.target.window > kMaxTargetWindow) {
          Error(path, absl::StrCat("must be at most 168h (7 days), got ",
                                   absl::FormatDuration(slo.target.window)));
        }
      }
    }
  }

  static void ConvertRules(const YAML::Node& r, ScalingRules& rules) {
    if (Present(Get(r, "stabilizationWindowSeconds"))) {
      rules.stabilization_window = absl::Seconds(Int(Get(r, "stabilizationWindowSeconds")));
    }
    if (const YAML::Node& policies = Get(r, "policies"); policies.IsSequence()) {
      rules.policies.clear();
      for (const auto& p : policies) {
        ScalingPolicy policy;
        policy.type = Text(Get(p, "type")) == "Percent" ? ScalingPolicy::Type::kPercent
                                                        : ScalingPolicy::Type::kPods;
        policy.value = Int32(Get(p, "value"));
        policy.period = absl::Seconds(Int(Get(p, "periodSeconds")));
        rules.policies.push_back(policy);
      }
    }
    if (Present(Get(r, "selectPolicy"))) {
      const std::string select = Text(Get(r, "selectPolicy"));
      rules.select = select == "Min"        ? SelectPolicy::kMin
                     : select == "Disabled" ? SelectPolicy::kDisabled
                                            : SelectPolicy::kMax;
    }
  }

  void ConvertMetrics(const YAML::Node& m, MetricsSpec& metrics) {
    if (Present(Get(m, "source"))) {
      metrics.source = Text(Get(m, "source")) == "Prometheus" ? MetricsSourceKind::kPrometheus
                                                              : MetricsSourceKind::kPods;
    }
    if (Present(Get(m, "port"))) metrics.port = Int32(Get(m, "port"));
    if (Present(Get(m, "path"))) metrics.path = Text(Get(m, "path"));
    if (const YAML::Node& p = Get(m, "prometheus"); Present(p)) {
      PrometheusSpec prometheus;
      prometheus.url = Text(Get(p, "url"));
      if (const YAML::Node& matchers = Get(p, "labelMatchers"); matchers.IsMap()) {
        static const std::regex kLabelName("^[a-zA-Z_][a-zA-Z0-9_]*$");
        for (const auto& e : matchers) {
          const std::string name = Text(e.first);
          if (!std::regex_match(name, kLabelName)) {
            Path path = P({"metrics", "prometheus", "labelMatchers"});
            path.push_back(PathElement{PathElement::Kind::kMapKey, name, 0});
            Error(std::move(path), "is not a valid Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)");
          }
          prometheus.label_matchers[name] = Text(e.second);
        }
      }
      metrics.prometheus = std::move(prometheus);
    }
    if (Present(Get(m, "interval"))) {
      metrics.interval = Duration(Get(m, "interval"), P({"metrics", "interval"}));
      Positive(metrics.interval, P({"metrics", "interval"}));
    }
    if (Present(Get(m, "staleAfter"))) {
      metrics.stale_after = Duration(Get(m, "staleAfter"), P({"metrics", "staleAfter"}));
    }
    if (metrics.source == MetricsSourceKind::kPrometheus && !metrics.prometheus) {
      Error(P({"metrics", "prometheus", "url"}), "required when spec.metrics.source is Prometheus");
    }
    if (metrics.stale_after <= metrics.interval) {
      Error(P({"metrics", "staleAfter"}),
            absl::StrCat("must be longer than spec.metrics.interval (",
                         absl::FormatDuration(metrics.interval), "), got ",
                         absl::FormatDuration(metrics.stale_after)));
    }
  }

  std::vector<FieldError>& errors_;
};

// ---- Documents -----------------------------------------------------------------------------

// One InferenceAutoscaler object (apiVersion and kind already checked).
absl::StatusOr<InferenceAutoscaler> ReadObject(const YAML::Node& obj, const Source& source,
                                               const Schemas& schemas) {
  Problems problems(source);
  static constexpr std::string_view kTopLevel[] = {"apiVersion", "kind", "metadata", "spec",
                                                   "status"};
  std::vector<std::string> seen;
  for (const auto& e : obj) {
    const std::string key = Text(e.first);
    if (std::find(std::begin(kTopLevel), std::end(kTopLevel), key) == std::end(kTopLevel)) {
      problems.Add(e.first.Mark(), key,
                   "unknown field (known fields: apiVersion, kind, metadata, spec, status)");
    } else if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      problems.Add(e.first.Mark(), key, "duplicate key");
    }
    seen.push_back(key);
  }

  InferenceAutoscaler out;
  const Entry metadata = Find(obj, "metadata");
  if (!metadata.found || !Present(metadata.value)) {
    problems.Add(metadata.found ? metadata.mark : obj.Mark(), "metadata",
                 "required field is missing");
  } else {
    const YAML::Node defaulted = schemas.metadata.ApplyDefaults(metadata.value);
    const std::vector<FieldError> errors = schemas.metadata.Violations(defaulted, "metadata");
    problems.AddAll(errors, obj, "metadata");
    if (errors.empty()) {
      const YAML::Node& m = defaulted;
      out.metadata.name = Text(Get(m, "name"));
      out.metadata.namespace_ = Text(Get(m, "namespace"));
      out.metadata.uid = Text(Get(m, "uid"));
      if (Present(Get(m, "generation"))) out.metadata.generation = IntOf(Get(m, "generation"));
      out.metadata.resource_version = Text(Get(m, "resourceVersion"));
      for (const char* field : {"labels", "annotations"}) {
        auto& target = field[0] == 'l' ? out.metadata.labels : out.metadata.annotations;
        if (const YAML::Node& map = Get(m, field); map.IsMap()) {
          for (const auto& e : map) target[Text(e.first)] = Text(e.second);
        }
      }
    }
  }

  const Entry spec = Find(obj, "spec");
  if (!spec.found || !Present(spec.value)) {
    problems.Add(spec.found ? spec.mark : obj.Mark(), "spec", "required field is missing");
  } else {
    const YAML::Node defaulted = schemas.spec.ApplyDefaults(spec.value);
    std::vector<FieldError> errors = schemas.spec.Violations(defaulted, "spec");
    if (errors.empty()) {
      SpecConverter converter(errors);
      out.spec = converter.Convert(defaulted);
    }
    problems.AddAll(errors, obj, "spec");
  }
  if (!problems.empty()) return problems.ToStatus();
  return out;
}

// Appends `obj` to `out` if it is an InferenceAutoscaler, reads a List's items, skips other kinds.
absl::Status ReadDocument(const YAML::Node& obj, const Source& source, const Schemas& schemas,
                          bool in_list, std::vector<InferenceAutoscaler>& out) {
  if (!Present(obj)) return absl::OkStatus();  // an empty document, e.g. after a final "---"
  if (!obj.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(source, obj.Mark()),
                     "expected a Kubernetes object (a mapping with apiVersion and "
                     "kind), got ",
                     obj.IsSequence() ? "a list" : "a scalar"));
  }
  const Entry api_version = Find(obj, "apiVersion");
  const Entry kind = Find(obj, "kind");
  if (!api_version.found || !kind.found || !api_version.value.IsScalar() ||
      !kind.value.IsScalar()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(source, obj.Mark()), "a Kubernetes object needs string apiVersion and kind fields"));
  }
  const std::string group_version = api_version.value.Scalar();
  const std::string kind_name = kind.value.Scalar();
  const size_t slash = group_version.find('/');
  const std::string group = slash == std::string::npos ? "" : group_version.substr(0, slash);
  const std::string version =
      slash == std::string::npos ? group_version : group_version.substr(slash + 1);

  if (!in_list &&
      ((kind_name == "List" && group_version == "v1") ||
       (kind_name == "InferenceAutoscalerList" && group == kInferenceAutoscalerGroup))) {
    const Entry items = Find(obj, "items");
    if (!items.found || !Present(items.value)) return absl::OkStatus();
    if (!items.value.IsSequence()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(source, items.mark), "items: must be a list"));
    }
    for (const auto& item : items.value) {
      if (absl::Status s = ReadDocument(item, source, schemas, true, out); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  if (kind_name != kInferenceAutoscalerKind || group != kInferenceAutoscalerGroup) {
    return absl::OkStatus();  // another kind: not ours to read
  }
  if (version != kInferenceAutoscalerVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(source, api_version.mark), "apiVersion: ", group_version,
                     " is not served by this build (it reads ", Sv(kInferenceAutoscalerGroup), "/",
                     Sv(kInferenceAutoscalerVersion), ")"));
  }
  absl::StatusOr<InferenceAutoscaler> ias = ReadObject(obj, source, schemas);
  if (!ias.ok()) return ias.status();
  out.push_back(*std::move(ias));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<InferenceAutoscaler>> ParseInferenceAutoscalers(
    std::string_view yaml, std::string_view source_name) {
  const absl::StatusOr<Schemas>& schemas = GetSchemas();
  if (!schemas.ok()) {
    return absl::InternalError(absl::StrCat("the embedded InferenceAutoscaler CRD is broken: ",
                                            schemas.status().message()));
  }
  std::vector<InferenceAutoscaler> out;
  for (const Piece& piece : api::SplitYamlStream(yaml)) {
    const Source source{source_name, piece.first_line};
    YAML::Node doc;
    try {
      doc = YAML::Load(piece.text);
    } catch (const YAML::ParserException& e) {
      if (e.mark.is_null()) {
        return absl::InvalidArgumentError(
            absl::StrCat(Sv(source_name), ": YAML syntax error: ", e.msg));
      }
      return absl::InvalidArgumentError(
          absl::StrCat(Sv(source_name), ":", piece.first_line + e.mark.line + 1, ":",
                       e.mark.column + 1, ": YAML syntax error: ", e.msg));
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(Where(source, e.mark), e.what()));
    }
    try {
      if (CountNodes(doc, kMaxNodesPerDocument) > kMaxNodesPerDocument) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(source, doc.Mark()), "document has more than ", kMaxNodesPerDocument,
                         " nodes once YAML aliases are expanded"));
      }
      if (absl::Status s = ReadDocument(doc, source, *schemas, false, out); !s.ok()) return s;
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(Where(source, e.mark), e.what()));
    }
  }
  return out;
}

absl::StatusOr<InferenceAutoscaler> ParseInferenceAutoscaler(std::string_view yaml,
                                                             std::string_view source_name) {
  absl::StatusOr<std::vector<InferenceAutoscaler>> all =
      ParseInferenceAutoscalers(yaml, source_name);
  if (!all.ok()) return all.status();
  if (all->size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(source_name), ": expected exactly one InferenceAutoscaler (",
                     Sv(kInferenceAutoscalerGroup), "/", Sv(kInferenceAutoscalerVersion),
                     "), found ", all->size()));
  }
  return std::move(all->front());
}

namespace {

// A YAML node as JSON: scalars by the core schema (ResolveScalar), maps with string keys.
nlohmann::json ToJson(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& kv : n) out[kv.first.Scalar()] = ToJson(kv.second);
    return out;
  }
  if (n.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : n) out.push_back(ToJson(item));
    return out;
  }
  const JsonScalar j = ResolveScalar(n);
  switch (j.kind) {
    case JsonScalar::Kind::kNull:
      return nullptr;
    case JsonScalar::Kind::kBool:
      return j.boolean;
    case JsonScalar::Kind::kInteger:
      return j.integer;
    case JsonScalar::Kind::kNumber:
      return j.number;
    case JsonScalar::Kind::kString:
      return j.text;
  }
  return nullptr;
}

// The InferenceAutoscaler objects of one parsed document (a List's items too).
void CollectObjects(const YAML::Node& doc, bool in_list, std::vector<nlohmann::json>& out) {
  if (!Present(doc) || !doc.IsMap()) return;
  // The loader's own reading of kind and apiVersion (ReadDocument), on input it accepted.
  const Entry kind = Find(doc, "kind");
  const Entry api_version = Find(doc, "apiVersion");
  const std::string kind_name = kind.found && kind.value.IsScalar() ? kind.value.Scalar() : "";
  const std::string group_version =
      api_version.found && api_version.value.IsScalar() ? api_version.value.Scalar() : "";
  const size_t slash = group_version.find('/');
  const std::string group = slash == std::string::npos ? "" : group_version.substr(0, slash);
  if (!in_list &&
      ((kind_name == "List" && group_version == "v1") ||
       (kind_name == "InferenceAutoscalerList" && group == kInferenceAutoscalerGroup))) {
    const Entry items = Find(doc, "items");
    if (items.found && items.value.IsSequence()) {
      for (const auto& item : items.value) CollectObjects(item, true, out);
    }
    return;
  }
  if (kind_name != kInferenceAutoscalerKind || group != kInferenceAutoscalerGroup) return;
  nlohmann::json obj = ToJson(doc);
  obj.erase("status");
  out.push_back(std::move(obj));
}

}  // namespace

absl::StatusOr<nlohmann::json> InferenceAutoscalerObject(std::string_view yaml,
                                                         std::string_view source_name) {
  // Validated first: refused input gets the loader's own errors, and what follows only reads
  // input the loader accepted.
  if (absl::StatusOr<InferenceAutoscaler> checked = ParseInferenceAutoscaler(yaml, source_name);
      !checked.ok()) {
    return checked.status();
  }
  std::vector<nlohmann::json> objects;
  try {
    for (const Piece& piece : api::SplitYamlStream(yaml))
      CollectObjects(YAML::Load(piece.text), false, objects);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(source_name), ": ", e.what()));
  }
  if (objects.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        Sv(source_name), ": expected exactly one InferenceAutoscaler, found ", objects.size()));
  }
  // The API server stores JSON, whose strings are UTF-8; a manifest that is not can't be an object.
  try {
    (void)objects.front().dump();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(source_name), ": not valid UTF-8, as an object must be: ", e.what()));
  }
  return std::move(objects.front());
}

absl::StatusOr<InferenceAutoscaler> LoadInferenceAutoscalerFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a manifest"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  return ParseInferenceAutoscaler(text.str(), path);
}

}  // namespace twinscale::api
