// Parses GPU, model and deployment profiles into typed edits of a DeploymentSpec, and resolves a
// deployment by applying them in precedence order. Each file is checked completely when it is
// added (every key known, every value of its type), so Resolve only applies edits and validates
// the result. yaml-cpp throws; every call into it is inside AddParsed's try block.
#include "simulator/profiles/profile_loader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "simulator/core/time.h"
#include "simulator/model/deployment.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::sim {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// abseil 20220623 as Debian builds it has its own string_view (ABSL_OPTION_USE_STD_STRING_VIEW
// is 0), which StrCat can't take from a std::string_view: Cat converts them on the way in.
absl::string_view Arg(std::string_view s) { return absl::string_view(s.data(), s.size()); }
template <typename T>
const T& Arg(const T& x) {
  return x;
}
template <typename... T>
std::string Cat(const T&... parts) {
  return absl::StrCat(Arg(parts)...);
}

using Edit = std::function<void(DeploymentSpec&)>;
using Edits = std::vector<Edit>;

// Where errors point: the file's name, and a 1-based line (yaml-cpp's marks are 0-based).
absl::Status ErrorAt(std::string_view source, const YAML::Mark& mark, std::string_view path,
                     std::string_view message) {
  std::string where(source);
  if (!mark.is_null() && mark.line >= 0) where += Cat(":", mark.line + 1);
  if (path.empty()) return absl::InvalidArgumentError(Cat(where, ": ", message));
  return absl::InvalidArgumentError(Cat(where, ": ", path, ": ", message));
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return Cat("\"", node.Scalar(), "\"");
  }
}

// One key of a mapping: its name, whether it must appear, and how to parse its value. `path` is
// the dotted key path used in messages ("engine.maxNumSeqs").
struct Key {
  std::string_view name;
  bool required = false;
  std::function<absl::Status(std::string_view source, const YAML::Node& value,
                             const std::string& path)>
      parse;
};

// Parses a mapping against its keys: unknown and duplicate keys are errors, so are missing
// required ones.
absl::Status ParseMapping(std::string_view source, const YAML::Node& node, std::string_view prefix,
                          const std::vector<Key>& keys) {
  if (!node.IsMap()) {
    return ErrorAt(source, node.Mark(), prefix,
                   Cat("expected a mapping of keys, got ", Describe(node)));
  }
  std::set<std::string, std::less<>> seen;
  for (const auto& entry : node) {
    const YAML::Node& key_node = entry.first;
    const std::string name = key_node.IsScalar() ? key_node.Scalar() : Describe(key_node);
    const std::string path = prefix.empty() ? name : Cat(prefix, ".", name);
    auto key = std::find_if(keys.begin(), keys.end(), [&](const Key& k) { return k.name == name; });
    if (key == keys.end()) {
      std::vector<std::string> known;
      for (const Key& k : keys) known.emplace_back(k.name);
      std::sort(known.begin(), known.end());
      return ErrorAt(source, key_node.Mark(), "",
                     Cat("unknown key ", path, " (known: ", absl::StrJoin(known, ", "), ")"));
    }
    if (!seen.insert(name).second) {
      return ErrorAt(source, key_node.Mark(), "", Cat("duplicate key ", path));
    }
    if (absl::Status s = key->parse(source, entry.second, path); !s.ok()) return s;
  }
  for (const Key& k : keys) {
    if (k.required && !seen.contains(k.name)) {
      return ErrorAt(source, node.Mark(), "",
                     Cat("missing required key ",
                         prefix.empty() ? std::string(k.name) : Cat(prefix, ".", k.name)));
    }
  }
  return absl::OkStatus();
}

// ---- typed scalars ------------------------------------------------------------------------------

absl::StatusOr<int64_t> ReadInt(std::string_view source, const YAML::Node& v,
                                const std::string& path, int64_t max) {
  int64_t out = 0;
  // absl::SimpleAtoi, not yaml-cpp's convert: that one reads "010" as octal.
  if (!v.IsScalar() || !absl::SimpleAtoi(v.Scalar(), &out)) {
    return ErrorAt(source, v.Mark(), path, Cat("expected an integer, got ", Describe(v)));
  }
  if (out > max || out < -max) {
    return ErrorAt(source, v.Mark(), path, Cat("integer out of range: ", v.Scalar()));
  }
  return out;
}

absl::StatusOr<double> ReadDouble(std::string_view source, const YAML::Node& v,
                                  const std::string& path) {
  double out = 0;
  if (!v.IsScalar() || !absl::SimpleAtod(v.Scalar(), &out) || !std::isfinite(out)) {
    return ErrorAt(source, v.Mark(), path, Cat("expected a number, got ", Describe(v)));
  }
  return out;
}

absl::StatusOr<bool> ReadBool(std::string_view source, const YAML::Node& v,
                              const std::string& path) {
  if (v.IsScalar()) {
    const std::string& s = v.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  return ErrorAt(source, v.Mark(), path, Cat("expected true or false, got ", Describe(v)));
}

absl::StatusOr<std::string> ReadString(std::string_view source, const YAML::Node& v,
                                       const std::string& path) {
  if (!v.IsScalar() || v.Scalar().empty()) {
    return ErrorAt(source, v.Mark(), path, Cat("expected a string, got ", Describe(v)));
  }
  return v.Scalar();
}

absl::StatusOr<absl::Duration> ReadDuration(std::string_view source, const YAML::Node& v,
                                            const std::string& path) {
  absl::Duration d;
  if (!v.IsScalar() || !absl::ParseDuration(v.Scalar(), &d) || d == absl::InfiniteDuration() ||
      d == -absl::InfiniteDuration()) {
    return ErrorAt(
        source, v.Mark(), path,
        Cat("expected a duration such as \"30s\", \"500ms\" or \"4us\", got ", Describe(v)));
  }
  if (d < absl::ZeroDuration()) {
    return ErrorAt(source, v.Mark(), path, Cat("must not be negative, got ", Describe(v)));
  }
  return d;
}

// Microseconds as a double, exact for any duration written to the nanosecond ("6910.42us" ->
// 6910.42): integer nanoseconds / 1000 is one correctly rounded division.
double ToMicros(absl::Duration d) { return static_cast<double>(absl::ToInt64Nanoseconds(d)) / 1e3; }

// ---- key factories: each parsed value becomes one edit of the spec ------------------------------

using Int32Setter = void (*)(DeploymentSpec&, int32_t);
using Int64Setter = void (*)(DeploymentSpec&, int64_t);
using DoubleSetter = void (*)(DeploymentSpec&, double);
using BoolSetter = void (*)(DeploymentSpec&, bool);
using DurationSetter = void (*)(DeploymentSpec&, absl::Duration);

Key Int32Key(std::string_view name, Edits* out, Int32Setter set) {
  return {name, false,
          [out, set](std::string_view src, const YAML::Node& v, const std::string& path) {
            absl::StatusOr<int64_t> x = ReadInt(src, v, path, std::numeric_limits<int32_t>::max());
            if (!x.ok()) return x.status();
            const int32_t value = static_cast<int32_t>(*x);
            out->push_back([set, value](DeploymentSpec& d) { set(d, value); });
            return absl::OkStatus();
          }};
}

Key Int64Key(std::string_view name, Edits* out, Int64Setter set) {
  return {name, false,
          [out, set](std::string_view src, const YAML::Node& v, const std::string& path) {
            absl::StatusOr<int64_t> x = ReadInt(src, v, path, std::numeric_limits<int64_t>::max());
            if (!x.ok()) return x.status();
            const int64_t value = *x;
            out->push_back([set, value](DeploymentSpec& d) { set(d, value); });
            return absl::OkStatus();
          }};
}

Key DoubleKey(std::string_view name, Edits* out, DoubleSetter set) {
  return {name, false,
          [out, set](std::string_view src, const YAML::Node& v, const std::string& path) {
            absl::StatusOr<double> x = ReadDouble(src, v, path);
            if (!x.ok()) return x.status();
            const double value = *x;
            out->push_back([set, value](DeploymentSpec& d) { set(d, value); });
            return absl::OkStatus();
          }};
}

Key BoolKey(std::string_view name, Edits* out, BoolSetter set) {
  return {name, false,
          [out, set](std::string_view src, const YAML::Node& v, const std::string& path) {
            absl::StatusOr<bool> x = ReadBool(src, v, path);
            if (!x.ok()) return x.status();
            const bool value = *x;
            out->push_back([set, value](DeploymentSpec& d) { set(d, value); });
            return absl::OkStatus();
          }};
}

Key DurationKey(std::string_view name, Edits* out, DurationSetter set) {
  return {name, false,
          [out, set](std::string_view src, const YAML::Node& v, const std::string& path) {
            absl::StatusOr<absl::Duration> x = ReadDuration(src, v, path);
            if (!x.ok()) return x.status();
            const absl::Duration value = *x;
            out->push_back([set, value](DeploymentSpec& d) { set(d, value); });
            return absl::OkStatus();
          }};
}

// A string that lands outside the spec (a profile's name, the model a deployment names).
Key StringKey(std::string_view name, std::string* out) {
  return {name, false, [out](std::string_view src, const YAML::Node& v, const std::string& path) {
            absl::StatusOr<std::string> x = ReadString(src, v, path);
            if (!x.ok()) return x.status();
            *out = *std::move(x);
            return absl::OkStatus();
          }};
}

// A key the mapping must have.
Key Required(Key key) {
  key.required = true;
  return key;
}

Key MapKey(std::string_view name, std::vector<Key> keys) {
  return {
      name, false,
      [keys = std::move(keys)](std::string_view src, const YAML::Node& v, const std::string& path) {
        return ParseMapping(src, v, path, keys);
      }};
}

// Free text for people; ignored.
Key DescriptionKey() {
  return {"description", false,
          [](std::string_view src, const YAML::Node& v, const std::string& path) {
            return ReadString(src, v, path).status();
          }};
}

// ---- the schemas --------------------------------------------------------------------------------

// vLLM engine arguments. A GPU profile's engineDefaults carries the four vLLM picks per GPU; a
// deployment's engine section all six.
std::vector<Key> EngineKeys(Edits* e, bool deployment) {
  std::vector<Key> keys = {
      Int32Key("maxNumSeqs", e, [](DeploymentSpec& d, int32_t v) { d.engine.max_num_seqs = v; }),
      Int32Key("maxNumBatchedTokens", e,
               [](DeploymentSpec& d, int32_t v) { d.engine.max_num_batched_tokens = v; }),
      DoubleKey("gpuMemoryUtilization", e,
                [](DeploymentSpec& d, double v) { d.engine.gpu_memory_utilization = v; }),
      Int32Key("blockSize", e, [](DeploymentSpec& d, int32_t v) { d.engine.block_size = v; }),
  };
  if (deployment) {
    keys.push_back(Int32Key("maxModelLen", e,
                            [](DeploymentSpec& d, int32_t v) { d.engine.max_model_len = v; }));
  }
  if (deployment) {
    keys.push_back(BoolKey("enablePrefixCaching", e,
                           [](DeploymentSpec& d, bool v) { d.engine.enable_prefix_caching = v; }));
    keys.push_back(BoolKey("schedulerReserveFullIsl", e,
                           [](DeploymentSpec& d, bool v) { d.engine.reserve_full_prompt = v; }));
    keys.push_back(Int32Key("longPrefillTokenThreshold", e, [](DeploymentSpec& d, int32_t v) {
      d.engine.long_prefill_token_threshold = v;
    }));
    keys.push_back(Int64Key("kvCapacityTokens", e, [](DeploymentSpec& d, int64_t v) {
      d.engine.kv_capacity_tokens_override = v;
    }));
  }
  return keys;
}

std::vector<Key> GpuKeys(Edits* e, std::string* name) {
  return {
      StringKey("name", name),
      DescriptionKey(),
      Required(DoubleKey("memoryMiB", e,
                         [](DeploymentSpec& d, double v) { d.gpu.memory_bytes = v * kMiB; })),
      Required(DoubleKey("peakTflops", e,
                         [](DeploymentSpec& d, double v) { d.gpu.peak_flops = v * 1e12; })),
      Required(DoubleKey("memoryBandwidthTBps", e,
                         [](DeploymentSpec& d, double v) { d.gpu.memory_bandwidth = v * 1e12; })),
      Required(
          DoubleKey("interconnectGBps", e,
                    [](DeploymentSpec& d, double v) { d.gpu.interconnect_bandwidth = v * 1e9; })),
      MapKey("engineDefaults", EngineKeys(e, /*deployment=*/false)),
  };
}

// Everything the arithmetic uses is required: a missing layer count must not silently become the
// built-in 8B's. dtypeBytes (2, bf16) and activationWorkspaceGiB (1.5) have sensible defaults.
std::vector<Key> ModelKeys(Edits* e, std::string* name) {
  return {
      StringKey("name", name),
      DescriptionKey(),
      Required(DoubleKey("parameters", e, [](DeploymentSpec& d, double v) { d.model.params = v; })),
      Required(Int32Key("layers", e, [](DeploymentSpec& d, int32_t v) { d.model.layers = v; })),
      Required(
          Int32Key("queryHeads", e, [](DeploymentSpec& d, int32_t v) { d.model.query_heads = v; })),
      Required(Int32Key("kvHeads", e, [](DeploymentSpec& d, int32_t v) { d.model.kv_heads = v; })),
      Required(Int32Key("headDim", e, [](DeploymentSpec& d, int32_t v) { d.model.head_dim = v; })),
      Required(Int32Key("hidden", e, [](DeploymentSpec& d, int32_t v) { d.model.hidden = v; })),
      Required(Int32Key("ffn", e, [](DeploymentSpec& d, int32_t v) { d.model.ffn = v; })),
      Required(Int32Key("vocab", e, [](DeploymentSpec& d, int32_t v) { d.model.vocab = v; })),
      Int32Key("dtypeBytes", e, [](DeploymentSpec& d, int32_t v) { d.model.dtype_bytes = v; }),
      DoubleKey("activationWorkspaceGiB", e,
                [](DeploymentSpec& d, double v) { d.model.activation_workspace_bytes = v * kGiB; }),
  };
}

std::vector<Key> DelayKeys(Edits* e, DelayDistribution LifecycleSpec::*field) {
  // Not through the factories: the setter needs `field`, so it can't be a plain function pointer.
  Key median{
      "median", false,
      [e, field](std::string_view src, const YAML::Node& v, const std::string& path) {
        absl::StatusOr<absl::Duration> x = ReadDuration(src, v, path);
        if (!x.ok()) return x.status();
        const SimDuration value = SimDuration::FromAbsl(*x);
        e->push_back([field, value](DeploymentSpec& d) { (d.lifecycle.*field).median = value; });
        return absl::OkStatus();
      }};
  Key ratio{"p90OverMedian", false,
            [e, field](std::string_view src, const YAML::Node& v, const std::string& path) {
              absl::StatusOr<double> x = ReadDouble(src, v, path);
              if (!x.ok()) return x.status();
              const double value = *x;
              e->push_back([field, value](DeploymentSpec& d) {
                (d.lifecycle.*field).p90_over_median = value;
              });
              return absl::OkStatus();
            }};
  return {median, ratio};
}

std::vector<Key> DeploymentKeys(Edits* e, std::string* name, std::string* model, std::string* gpu) {
  return {
      StringKey("name", name),
      DescriptionKey(),
      Required(StringKey("model", model)),
      Required(StringKey("gpu", gpu)),
      Int32Key("tensorParallel", e, [](DeploymentSpec& d, int32_t v) { d.tensor_parallel = v; }),
      MapKey("engine", EngineKeys(e, /*deployment=*/true)),
      {"latencyModel", false,
       [e](std::string_view src, const YAML::Node& v, const std::string& path) -> absl::Status {
         absl::StatusOr<LatencyModelKind> kind = v.IsScalar()
                                                     ? ParseLatencyModelKind(v.Scalar())
                                                     : absl::InvalidArgumentError("not a scalar");
         if (!kind.ok()) {
           return ErrorAt(src, v.Mark(), path,
                          Cat("expected roofline or linear, got ", Describe(v)));
         }
         const LatencyModelKind value = *kind;
         e->push_back([value](DeploymentSpec& d) { d.latency_model = value; });
         return absl::OkStatus();
       }},
      MapKey(
          "roofline",
          {
              DoubleKey("mfu", e, [](DeploymentSpec& d, double v) { d.roofline.mfu = v; }),
              DoubleKey("attentionMfu", e,
                        [](DeploymentSpec& d, double v) { d.roofline.attention_mfu = v; }),
              DoubleKey("bandwidthEfficiency", e,
                        [](DeploymentSpec& d, double v) { d.roofline.bandwidth_efficiency = v; }),
              DurationKey("perLayerOverhead", e,
                          [](DeploymentSpec& d, absl::Duration v) {
                            d.roofline.per_layer_overhead_us = ToMicros(v);
                          }),
              DurationKey("perStepOverhead", e,
                          [](DeploymentSpec& d, absl::Duration v) {
                            d.roofline.per_step_overhead_us = ToMicros(v);
                          }),
              DurationKey("allreduceLatency", e,
                          [](DeploymentSpec& d, absl::Duration v) {
                            d.roofline.allreduce_latency_us = ToMicros(v);
                          }),
              DurationKey("frontEndDelay", e,
                          [](DeploymentSpec& d, absl::Duration v) {
                            d.roofline.front_end_delay_us = ToMicros(v);
                          }),
              DurationKey("tokenEmissionDelay", e,
                          [](DeploymentSpec& d, absl::Duration v) {
                            d.roofline.token_emission_delay_us = ToMicros(v);
                          }),
          }),
      // BLIS's coefficients, named as in LinearCoefficients; b1, b2 and a1 are per token.
      MapKey("linear",
             {
                 DurationKey(
                     "b0", e,
                     [](DeploymentSpec& d, absl::Duration v) { d.linear.b0_us = ToMicros(v); }),
                 DurationKey(
                     "b1", e,
                     [](DeploymentSpec& d, absl::Duration v) { d.linear.b1_us = ToMicros(v); }),
                 DurationKey(
                     "b2", e,
                     [](DeploymentSpec& d, absl::Duration v) { d.linear.b2_us = ToMicros(v); }),
                 DurationKey(
                     "a0", e,
                     [](DeploymentSpec& d, absl::Duration v) { d.linear.a0_us = ToMicros(v); }),
                 DurationKey(
                     "a1", e,
                     [](DeploymentSpec& d, absl::Duration v) { d.linear.a1_us = ToMicros(v); }),
                 DurationKey(
                     "a2", e,
                     [](DeploymentSpec& d, absl::Duration v) { d.linear.a2_us = ToMicros(v); }),
             }),
      MapKey("lifecycle",
             {
                 MapKey("provisioning", DelayKeys(e, &LifecycleSpec::provisioning)),
                 MapKey("loading", DelayKeys(e, &LifecycleSpec::loading)),
                 MapKey("warmingUp", DelayKeys(e, &LifecycleSpec::warming_up)),
                 DurationKey("slowPeriod", e,
                             [](DeploymentSpec& d, absl::Duration v) {
                               d.lifecycle.slow_period = SimDuration::FromAbsl(v);
                             }),
                 DoubleKey("slowFactor", e,
                           [](DeploymentSpec& d, double v) { d.lifecycle.slow_factor = v; }),
                 DurationKey("drainGrace", e,
                             [](DeploymentSpec& d, absl::Duration v) {
                               d.lifecycle.drain_grace = SimDuration::FromAbsl(v);
                             }),
             }),
  };
}

// "deployments/x.yaml" -> ("deployments", "x").
absl::StatusOr<std::pair<std::string_view, std::string_view>> SplitKindAndName(
    std::string_view path) {
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos) {
    return absl::InvalidArgumentError(
        Cat("profile path \"", path, "\" is not <gpus|models|deployments>/<name>.yaml"));
  }
  std::string_view kind = path.substr(0, slash);
  std::string_view name = path.substr(slash + 1);
  for (std::string_view ext : {".yaml", ".yml"}) {
    if (name.ends_with(ext)) {
      name.remove_suffix(ext.size());
      break;
    }
  }
  if (name.empty() || name.find('/') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        Cat("profile path \"", path, "\" is not <gpus|models|deployments>/<name>.yaml"));
  }
  return std::make_pair(kind, name);
}

std::string KnownNames(const std::vector<std::string>& names) {
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

}  // namespace

// ---- ProfileRegistry ----------------------------------------------------------------------------

ProfileRegistry::ProfileMap* ProfileRegistry::MapFor(std::string_view kind) {
  if (kind == "gpus") return &gpus_;
  if (kind == "models") return &models_;
  if (kind == "deployments") return &deployments_;
  return nullptr;
}

const ProfileRegistry::ProfileMap* ProfileRegistry::MapFor(std::string_view kind) const {
  return const_cast<ProfileRegistry*>(this)->MapFor(kind);
}

absl::StatusOr<ProfileRegistry> ProfileRegistry::LoadEmbedded() {
  ProfileRegistry registry;
  for (const auto& [path, yaml] : EmbeddedProfiles()) {
    if (absl::Status s = registry.AddYaml(path, yaml); !s.ok()) return s;
  }
  return registry;
}

absl::Status ProfileRegistry::AddYaml(std::string_view kind_and_name_path, std::string_view yaml) {
  absl::StatusOr<std::pair<std::string_view, std::string_view>> kn =
      SplitKindAndName(kind_and_name_path);
  if (!kn.ok()) return kn.status();
  return AddParsed(kn->first, kn->second, kind_and_name_path, yaml);
}

absl::Status ProfileRegistry::AddDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(Cat("profile directory ", dir, " does not exist"));
  }
  // All or nothing: a broken file leaves the registry as it was.
  ProfileRegistry updated = *this;
  bool any_kind = false;
  for (std::string_view kind : {"gpus", "models", "deployments"}) {
    const fs::path sub = fs::path(dir) / kind;
    if (!fs::is_directory(sub, ec)) continue;
    any_kind = true;
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(sub, ec)) {
      const std::string ext = entry.path().extension().string();
      if (entry.is_regular_file(ec) && (ext == ".yaml" || ext == ".yml")) {
        files.push_back(entry.path());
      }
    }
    if (ec) return absl::InvalidArgumentError(Cat("reading ", sub.string(), ": ", ec.message()));
    std::sort(files.begin(), files.end());  // deterministic order (and error) across filesystems
    for (const fs::path& file : files) {
      std::ifstream in(file, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      if (!in) {
        return absl::InvalidArgumentError(Cat("cannot read ", file.string()));
      }
      if (absl::Status s = updated.AddParsed(kind, file.stem().string(), file.string(), text.str());
          !s.ok()) {
        return s;
      }
    }
  }
  if (!any_kind) {
    return absl::InvalidArgumentError(
        Cat("profile directory ", dir, " holds none of gpus/, models/, deployments/"));
  }
  *this = std::move(updated);
  return absl::OkStatus();
}

absl::Status ProfileRegistry::AddParsed(std::string_view kind, std::string_view name,
                                        std::string_view source, std::string_view yaml) {
  ProfileMap* map = MapFor(kind);
  if (map == nullptr) {
    return absl::InvalidArgumentError(
        Cat(source, ": unknown profile kind \"", kind, "\" (known: deployments, gpus, models)"));
  }
  auto profile = std::make_shared<Profile>();
  profile->source = std::string(source);
  std::string declared_name;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap()) {
      return ErrorAt(source, root.Mark(), "",
                     Cat("expected a mapping of keys at the top, got ", Describe(root)));
    }
    std::vector<Key> keys;
    if (kind == "gpus") {
      keys = GpuKeys(&profile->edits, &declared_name);
    } else if (kind == "models") {
      keys = ModelKeys(&profile->edits, &declared_name);
    } else {
      keys = DeploymentKeys(&profile->edits, &declared_name, &profile->model, &profile->gpu);
    }
    if (absl::Status s = ParseMapping(source, root, "", keys); !s.ok()) return s;
    if (!declared_name.empty() && declared_name != name) {
      return ErrorAt(source, root["name"].Mark(), "name",
                     Cat("\"", declared_name, "\" differs from the file name \"", name, "\""));
    }
  } catch (const YAML::Exception& e) {
    return ErrorAt(source, e.mark, "", e.msg);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat(source, ": ", e.what()));
  }
  // Profiles name themselves in the spec, so a resolved spec says which files it came from.
  const std::string n(name);
  if (kind == "gpus") {
    profile->edits.insert(profile->edits.begin(), [n](DeploymentSpec& d) { d.gpu.name = n; });
  } else if (kind == "models") {
    profile->edits.insert(profile->edits.begin(), [n](DeploymentSpec& d) { d.model.name = n; });
  }
  (*map)[n] = std::move(profile);
  return absl::OkStatus();
}

std::vector<std::string> ProfileRegistry::Names(std::string_view kind) const {
  std::vector<std::string> names;
  if (const ProfileMap* map = MapFor(kind)) {
    for (const auto& [name, profile] : *map) names.push_back(name);
  }
  return names;  // std::map: already sorted
}

absl::StatusOr<DeploymentSpec> ProfileRegistry::Resolve(std::string_view deployment,
                                                        const DeploymentOverrides& o) const {
  DeploymentSpec d;  // built-in defaults: the lowest precedence
  const Profile* dep = nullptr;
  if (!deployment.empty()) {
    auto it = deployments_.find(deployment);
    if (it == deployments_.end()) {
      return absl::InvalidArgumentError(Cat("unknown deployment profile \"", deployment,
                                            "\"; known: ", KnownNames(Names("deployments"))));
    }
    dep = it->second.get();
  }
  const std::string gpu_name = o.gpu ? *o.gpu : dep ? dep->gpu : "";
  const std::string model_name = o.model ? *o.model : dep ? dep->model : "";
  // A name the deployment profile gave (rather than a flag) says where it came from.
  auto unknown = [&](std::string_view kind, std::string_view what, const std::string& name,
                     bool by_override) {
    const std::string named_by =
        by_override || dep == nullptr
            ? ""
            : Cat(" named by deployment profile \"", deployment, "\" (", dep->source, ")");
    return absl::InvalidArgumentError(Cat("unknown ", what, " profile \"", name, "\"", named_by,
                                          "; known: ", KnownNames(Names(kind))));
  };
  if (!gpu_name.empty()) {
    auto it = gpus_.find(gpu_name);
    if (it == gpus_.end()) return unknown("gpus", "gpu", gpu_name, o.gpu.has_value());
    for (const Edit& edit : it->second->edits) edit(d);
  }
  if (!model_name.empty()) {
    auto it = models_.find(model_name);
    if (it == models_.end()) return unknown("models", "model", model_name, o.model.has_value());
    for (const Edit& edit : it->second->edits) edit(d);
  }
  if (dep != nullptr) {
    for (const Edit& edit : dep->edits) edit(d);
  }
  // Flags last. A deployment whose model, GPU or tensor parallelism a flag changed is no longer
  // the profile it started from, and is named for what it is.
  const bool hardware_changed =
      dep != nullptr && ((o.model && *o.model != dep->model) || (o.gpu && *o.gpu != dep->gpu) ||
                         (o.tensor_parallel && *o.tensor_parallel != d.tensor_parallel));
  if (o.tensor_parallel) d.tensor_parallel = *o.tensor_parallel;
  if (o.max_num_seqs) d.engine.max_num_seqs = *o.max_num_seqs;
  if (o.max_num_batched_tokens) d.engine.max_num_batched_tokens = *o.max_num_batched_tokens;
  if (o.block_size) d.engine.block_size = *o.block_size;
  if (o.max_model_len) d.engine.max_model_len = *o.max_model_len;
  if (o.gpu_memory_utilization) d.engine.gpu_memory_utilization = *o.gpu_memory_utilization;
  if (o.latency_model) d.latency_model = *o.latency_model;
  if (o.kv_capacity_tokens) d.engine.kv_capacity_tokens_override = *o.kv_capacity_tokens;
  if (o.enable_prefix_caching) d.engine.enable_prefix_caching = *o.enable_prefix_caching;
  if (o.reserve_full_prompt) d.engine.reserve_full_prompt = *o.reserve_full_prompt;
  if (o.long_prefill_token_threshold) {
    d.engine.long_prefill_token_threshold = *o.long_prefill_token_threshold;
  }
  d.name = dep != nullptr && !hardware_changed
               ? std::string(deployment)
               : Cat(d.model.name, "-", d.gpu.name, "-tp", d.tensor_parallel);
  if (absl::Status s = ValidateDeployment(d); !s.ok()) {
    return absl::InvalidArgumentError(Cat("deployment ", d.name, ": ", s.message()));
  }
  return d;
}

// ---- free functions -----------------------------------------------------------------------------

absl::StatusOr<LatencyModelKind> ParseLatencyModelKind(std::string_view name) {
  if (name == "roofline") return LatencyModelKind::kRoofline;
  if (name == "linear") return LatencyModelKind::kLinear;
  return absl::InvalidArgumentError(
      Cat("unknown latency model \"", name, "\" (known: roofline, linear)"));
}

std::string_view LatencyModelKindName(LatencyModelKind kind) {
  switch (kind) {
    case LatencyModelKind::kRoofline:
      return "roofline";
    case LatencyModelKind::kLinear:
      return "linear";
  }
  return "unknown";
}

absl::Status ValidateDeployment(const DeploymentSpec& d) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(Cat(parts...)); };
  // Positive and finite; NaN fails too.
  auto positive = [](double x) { return x > 0 && std::isfinite(x); };
  auto fraction = [](double x) { return x > 0 && x <= 1; };

  // The GPU.
  if (!positive(d.gpu.memory_bytes))
    return bad("gpu.memory_bytes must be > 0, got ", d.gpu.memory_bytes);
  if (!positive(d.gpu.peak_flops)) return bad("gpu.peak_flops must be > 0, got ", d.gpu.peak_flops);
  if (!positive(d.gpu.memory_bandwidth)) {
    return bad("gpu.memory_bandwidth must be > 0, got ", d.gpu.memory_bandwidth);
  }
  if (!positive(d.gpu.interconnect_bandwidth)) {
    return bad("gpu.interconnect_bandwidth must be > 0, got ", d.gpu.interconnect_bandwidth);
  }

  // The model.
  const ModelSpec& m = d.model;
  if (!positive(m.params)) return bad("model.params must be > 0, got ", m.params);
  for (const auto& [field, value] : {std::pair<std::string_view, int32_t>{"layers", m.layers},
                                     {"query_heads", m.query_heads},
                                     {"kv_heads", m.kv_heads},
                                     {"head_dim", m.head_dim},
                                     {"hidden", m.hidden},
                                     {"ffn", m.ffn},
                                     {"vocab", m.vocab},
                                     {"dtype_bytes", m.dtype_bytes}}) {
    if (value <= 0) return bad("model.", field, " must be > 0, got ", value);
  }
  if (m.query_heads % m.kv_heads != 0) {
    return bad("model.query_heads (", m.query_heads, ") must be a multiple of model.kv_heads (",
               m.kv_heads, ")");
  }
  if (!(m.activation_workspace_bytes >= 0) || !std::isfinite(m.activation_workspace_bytes)) {
    return bad("model.activation_workspace_bytes must be >= 0, got ", m.activation_workspace_bytes);
  }

  // Tensor parallelism, with vLLM's divisibility rules.
  const int32_t tp = d.tensor_parallel;
  if (tp < 1) return bad("tensor_parallel must be >= 1, got ", tp);
  if (m.query_heads % tp != 0) {
    return bad("tensor_parallel (", tp, ") must divide model.query_heads (", m.query_heads,
               "): vLLM splits attention heads evenly across ranks");
  }
  if (m.kv_heads % tp != 0 && tp % m.kv_heads != 0) {
    return bad("tensor_parallel (", tp, ") and model.kv_heads (", m.kv_heads,
               ") must divide one another: vLLM splits or replicates KV heads evenly");
  }

  // Engine limits.
  const EngineLimits& e = d.engine;
  if (e.max_num_seqs < 1) return bad("max_num_seqs must be >= 1, got ", e.max_num_seqs);
  if (e.max_num_batched_tokens < 1) {
    return bad("max_num_batched_tokens must be >= 1, got ", e.max_num_batched_tokens);
  }
  if (e.max_num_batched_tokens < e.max_num_seqs) {
    return bad("max_num_batched_tokens (", e.max_num_batched_tokens, ") must be >= max_num_seqs (",
               e.max_num_seqs, "): vLLM requires it");
  }
  if (e.block_size < 1) return bad("block_size must be >= 1, got ", e.block_size);
  if (e.max_model_len < 2) {
    return bad("max_model_len must be >= 2 (a prompt token and an output token), got ",
               e.max_model_len);
  }
  if (!fraction(e.gpu_memory_utilization)) {
    return bad("gpu_memory_utilization must be in (0, 1], got ", e.gpu_memory_utilization);
  }
  if (e.long_prefill_token_threshold < 0) {
    return bad("long_prefill_token_threshold must be >= 0 (0 = off), got ",
               e.long_prefill_token_threshold);
  }
  if (e.kv_capacity_tokens_override < 0) {
    return bad("kv_capacity_tokens must be >= 0 (0 = computed), got ",
               e.kv_capacity_tokens_override);
  }

  // Latency models: both are checked, so switching the kind by flag can't expose a bad one.
  const RooflineParams& r = d.roofline;
  for (const auto& [field, value] : {std::pair<std::string_view, double>{"mfu", r.mfu},
                                     {"attention_mfu", r.attention_mfu},
                                     {"bandwidth_efficiency", r.bandwidth_efficiency}}) {
    if (!fraction(value)) return bad("roofline.", field, " must be in (0, 1], got ", value);
  }
  for (const auto& [field, value] :
       {std::pair<std::string_view, double>{"per_layer_overhead_us", r.per_layer_overhead_us},
        {"per_step_overhead_us", r.per_step_overhead_us},
        {"allreduce_latency_us", r.allreduce_latency_us},
        {"front_end_delay_us", r.front_end_delay_us},
        {"token_emission_delay_us", r.token_emission_delay_us}}) {
    if (!(value >= 0) || !std::isfinite(value)) {
      return bad("roofline.", field, " must be >= 0, got ", value);
    }
  }
  const LinearCoefficients& c = d.linear;
  for (const auto& [field, value] : {std::pair<std::string_view, double>{"b0_us", c.b0_us},
                                     {"b1_us", c.b1_us},
                                     {"b2_us", c.b2_us},
                                     {"a0_us", c.a0_us},
                                     {"a1_us", c.a1_us},
                                     {"a2_us", c.a2_us}}) {
    if (!(value >= 0) || !std::isfinite(value)) {
      return bad("linear.", field, " must be >= 0, got ", value);
    }
  }
  // Every non-empty step must take time, or the engine could loop without advancing the clock.
  if (!(c.b0_us + std::min(c.b1_us, c.b2_us) > 0)) {
    return bad("linear: b0_us + min(b1_us, b2_us) must be > 0 (a step must take time)");
  }

  // Lifecycle.
  const LifecycleSpec& l = d.lifecycle;
  for (const auto& [field, delay] :
       {std::pair<std::string_view, const DelayDistribution*>{"provisioning", &l.provisioning},
        {"loading", &l.loading},
        {"warming_up", &l.warming_up}}) {
    if (delay->median < SimDuration::Zero()) {
      return bad("lifecycle.", field, ".median must be >= 0, got ",
                 absl::FormatDuration(delay->median.ToAbsl()));
    }
    if (!(delay->p90_over_median >= 1) || !std::isfinite(delay->p90_over_median)) {
      return bad("lifecycle.", field, ".p90_over_median must be >= 1 (1 = constant), got ",
                 delay->p90_over_median);
    }
  }
  if (l.slow_period < SimDuration::Zero()) {
    return bad("lifecycle.slow_period must be >= 0, got ",
               absl::FormatDuration(l.slow_period.ToAbsl()));
  }
  if (!(l.slow_factor >= 1) || !std::isfinite(l.slow_factor)) {
    return bad("lifecycle.slow_factor must be >= 1 (a step-time multiplier), got ", l.slow_factor);
  }
  if (l.drain_grace < SimDuration::Zero()) {
    return bad("lifecycle.drain_grace must be >= 0, got ",
               absl::FormatDuration(l.drain_grace.ToAbsl()));
  }

  // The KV cache must hold at least one block.
  const int64_t kv_tokens = KvCapacityTokens(d);
  if (kv_tokens < e.block_size) {
    const double budget = d.gpu.memory_bytes * e.gpu_memory_utilization;
    return bad(absl::StrFormat(
        "KV capacity is %d tokens: weights (%.1f GiB per GPU) + activation workspace (%.1f GiB) "
        "leave no room in gpu_memory_utilization x device memory (%.1f GiB); raise "
        "tensor_parallel or gpu_memory_utilization",
        kv_tokens, WeightBytesPerGpu(d) / kGiB, m.activation_workspace_bytes / kGiB,
        budget / kGiB));
  }
  return absl::OkStatus();
}

}  // namespace twinscale::sim
