// JSON <-> YAML conversion for the schema engine; see json_yaml.h.
#include "tests/fake_apiserver/json_yaml.h"

#include <cmath>
#include <string>

#include "controller/api/openapi_schema.h"

namespace twinscale::fake_apiserver {

using nlohmann::json;

namespace {
constexpr char kStrTag[] = "tag:yaml.org,2002:str";
}  // namespace

std::string JsonText(const json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

YAML::Node JsonToYaml(const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      YAML::Node map(YAML::NodeType::Map);
      for (auto it = value.begin(); it != value.end(); ++it) {
        YAML::Node key(it.key());
        key.SetTag(kStrTag);
        map.force_insert(key, JsonToYaml(it.value()));
      }
      return map;
    }
    case json::value_t::array: {
      YAML::Node seq(YAML::NodeType::Sequence);
      for (const json& item : value) seq.push_back(JsonToYaml(item));
      return seq;
    }
    case json::value_t::string: {
      YAML::Node s(value.get<std::string>());
      s.SetTag(kStrTag);
      return s;
    }
    case json::value_t::boolean:
      return YAML::Node(value.get<bool>() ? "true" : "false");
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      // nlohmann prints the shortest text that reads back as the same number ("0.85", "3").
      return YAML::Node(value.dump());
    default:
      return YAML::Node(YAML::NodeType::Null);
  }
}

json YamlToJson(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsMap()) {
    json out = json::object();
    for (const auto& entry : node) {
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
      out[key] = YamlToJson(entry.second);
    }
    return out;
  }
  if (node.IsSequence()) {
    json out = json::array();
    for (const auto& item : node) out.push_back(YamlToJson(item));
    return out;
  }
  const api::JsonScalar s = api::ResolveScalar(node);
  switch (s.kind) {
    case api::JsonScalar::Kind::kNull:
      return nullptr;
    case api::JsonScalar::Kind::kBool:
      return s.boolean;
    case api::JsonScalar::Kind::kInteger:
      return s.integer;
    case api::JsonScalar::Kind::kNumber:
      if (!std::isfinite(s.number)) return nullptr;
      return s.number;
    case api::JsonScalar::Kind::kString:
      return s.text;
  }
  return nullptr;
}

}  // namespace twinscale::fake_apiserver
