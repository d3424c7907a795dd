// JSON text for the wire, and JSON (nlohmann) <-> YAML (yaml-cpp) for the fake API server, so it
// can run the project's own OpenAPI schema engine (controller/api/openapi_schema.h, which works
// on YAML nodes) on the JSON objects it stores: one schema engine for the loader, `replay` and the
// fake, as the one-schema rule wants (docs/architecture.md "The InferenceAutoscaler spec").
//
// The conversion keeps JSON's types exact through the engine's YAML 1.2 core-schema resolution:
// strings become scalars tagged !!str (so "5", "true" or "null" stay strings), numbers and
// booleans become plain scalars that resolve back to the same number or boolean, null a YAML
// null.
//
// Thread-safety: free functions over values.
#ifndef TWINSCALE_TESTS_FAKE_APISERVER_JSON_YAML_H_
#define TWINSCALE_TESTS_FAKE_APISERVER_JSON_YAML_H_

#include <string>

#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace twinscale::fake_apiserver {

// Compact JSON text. Strings that are not valid UTF-8 (they can arrive in paths and headers) get
// U+FFFD in place of the bad bytes, as Go's encoding/json writes them, instead of an exception.
std::string JsonText(const nlohmann::json& value);

YAML::Node JsonToYaml(const nlohmann::json& value);

// The JSON value a YAML node stands for (scalars resolved with api::ResolveScalar). Map keys
// are taken as strings. Never fails: non-finite numbers (.inf, .nan) become null, since JSON has
// no such numbers.
nlohmann::json YamlToJson(const YAML::Node& node);

}  // namespace twinscale::fake_apiserver

#endif  // TWINSCALE_TESTS_FAKE_APISERVER_JSON_YAML_H_
