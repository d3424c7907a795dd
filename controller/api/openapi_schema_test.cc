// Tests of the structural-schema engine: YAML scalars resolved as JSON (YAML 1.2 core schema),
// validation keyword by keyword, the API server's defaulting rules, schema parsing, the structural
// checks (on the shipped CRD, which must pass, and on broken schemas, which must not), and error
// locations. Expected messages are written out in full so a change in wording is a visible choice.
#include "controller/api/openapi_schema.h"

#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::api {
namespace {

using ::testing::HasSubstr;

constexpr char kCrdPath[] = "deploy/crds/twinscale.io_inferenceautoscalers.yaml";

absl::StatusOr<OpenApiSchema> Schema(std::string_view yaml) {
  return OpenApiSchema::FromYaml(YAML::Load(std::string(yaml)));
}

// An order-insensitive rendering of a value as the JSON it stands for, for comparisons.
std::string Canon(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsMap()) {
    std::map<std::string, std::string> entries;
    for (const auto& e : n) entries[e.first.Scalar()] = Canon(e.second);
    std::vector<std::string> parts;
    for (const auto& [k, v] : entries) parts.push_back(absl::StrCat(k, ":", v));
    return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
  }
  if (n.IsSequence()) {
    std::vector<std::string> parts;
    for (const auto& item : n) parts.push_back(Canon(item));
    return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
  }
  const JsonScalar s = ResolveScalar(n);
  if (s.kind == JsonScalar::Kind::kNull) return "null";
  if (s.kind == JsonScalar::Kind::kString) return absl::StrCat("'", s.text, "'");
  return s.text;
}

std::vector<std::string> ErrorStrings(const std::vector<FieldError>& errors) {
  std::vector<std::string> out;
  for (const FieldError& e : errors) out.push_back(e.ToString());
  return out;
}

// ---- Scalars ---------------------------------------------------------------------------------

TEST(ResolveScalar, Yaml12CoreSchema) {
  using K = JsonScalar::Kind;
  struct Case {
    std::string yaml;  // the value of key v
    K kind;
    double number = 0;  // for kInteger and kNumber
  };
  const std::vector<Case> cases = {
      {"v: yes", K::kString},  // YAML 1.1 boolean words are strings in 1.2
      {"v: No", K::kString},
      {"v: on", K::kString},
      {"v: true", K::kBool},
      {"v: FALSE", K::kBool},
      {"v: 'true'", K::kString},  // quoted: always a string
      {"v: \"10\"", K::kString},
      {"v: !!str 10", K::kString},
      {"v: |\n  10\n", K::kString},  // block scalar
      {"v: 10", K::kInteger, 10},
      {"v: -7", K::kInteger, -7},
      {"v: +5", K::kInteger, 5},
      {"v: 0x1F", K::kInteger, 31},
      {"v: 0o17", K::kInteger, 15},
      {"v: 1.5", K::kNumber, 1.5},
      {"v: .5", K::kNumber, 0.5},
      {"v: 5.", K::kNumber, 5},
      {"v: 1e3", K::kNumber, 1000},
      {"v: -2.5E-1", K::kNumber, -0.25},
      {"v: 99999999999999999999", K::kNumber, 1e20},  // beyond int64: still a JSON number
      {"v: .inf", K::kNumber, INFINITY},
      {"v: 1_000", K::kString},  // YAML 1.1's digit separators are not 1.2
      {"v: 1:30", K::kString},   // nor its sexagesimal numbers
      {"v: 0x", K::kString},
      {"v: 500ms", K::kString},
      {"v: ~", K::kNull},
      {"v: null", K::kNull},
      {"v:", K::kNull},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    const JsonScalar s = ResolveScalar(YAML::Load(c.yaml)["v"]);
    EXPECT_EQ(s.kind, c.kind);
    if (c.kind == K::kInteger || c.kind == K::kNumber) {
      EXPECT_EQ(s.number, c.number);
    }
    if (c.kind == K::kInteger) {
      EXPECT_EQ(s.integer, static_cast<int64_t>(c.number));
    }
  }
  EXPECT_TRUE(ResolveScalar(YAML::Load("v: true")["v"]).boolean);
  EXPECT_TRUE(std::isnan(ResolveScalar(YAML::Load("v: .nan")["v"]).number));
}

// ---- Validation ------------------------------------------------------------------------------

struct ValidationCase {
  std::string name;
  std::string schema;
  std::string value;
  std::vector<std::string> want;  // every error, in order; empty = valid
};

TEST(OpenApiSchemaValidate, KeywordByKeyword) {
  const std::string kObject =
      "type: object\n"
      "required: [name]\n"
      "properties:\n"
      "  name: {type: string, minLength: 1, maxLength: 5}\n"
      "  count: {type: integer, format: int32, minimum: 1, maximum: 10}\n"
      "  ratio: {type: number, minimum: 0, exclusiveMinimum: true, maximum: 1, "
      "exclusiveMaximum: true}\n"
      "  flag: {type: boolean}\n"
      "  color: {type: string, enum: [Red, Green]}\n"
      "  code: {type: string, pattern: '^[A-Z]{3}$'}\n"
      "  when: {type: string, format: date-time}\n"
      "  wait: {type: string, pattern: '" +
      std::string(kDurationPattern) +
      "'}\n"
      "  tags: {type: object, additionalProperties: {type: integer}}\n"
      "  list: {type: array, minItems: 1, maxItems: 2, items: {type: integer}}\n"
      "  set: {type: array, x-kubernetes-list-type: set, items: {type: string}}\n"
      "  entries:\n"
      "    type: array\n"
      "    x-kubernetes-list-type: map\n"
      "    x-kubernetes-list-map-keys: [type]\n"
      "    items:\n"
      "      type: object\n"
      "      required: [type]\n"
      "      properties: {type: {type: string}, value: {type: string}}\n"
      "  free: {type: object, x-kubernetes-preserve-unknown-fields: true}\n"
      "  maybe: {type: string, nullable: true}\n"
      "  port: {x-kubernetes-int-or-string: true}\n";
  const std::vector<ValidationCase> cases = {
      {"a valid object",
       kObject,
       "{name: ab, count: 3, ratio: 0.5, flag: false, color: Red, code: ABC, "
       "when: '2024-05-01T12:00:00Z', wait: 1h30m, tags: {a: 1}, list: [1], set: [a, b], "
       "entries: [{type: A}, {type: B}], free: {anything: [1, 2]}, maybe: null, port: 80}",
       {}},
      {"int-or-string takes a string", kObject, "{name: a, port: http}", {}},
      {"an integer written 3.0 is an integer", kObject, "{name: a, count: 3.0}", {}},
      {"missing required", kObject, "{count: 3}", {"name: required field is missing"}},
      {"wrong type: string for integer",
       kObject,
       "{name: a, count: three}",
       {"count: must be of type integer, got string \"three\""}},
      {"wrong type: object for string",
       kObject,
       "{name: {first: a}}",
       {"name: must be of type string, got an object"}},
      {"wrong type: number for string",
       kObject,
       "{name: 1.5}",
       {"name: must be of type string, got number 1.5 (quote it to make it a string)"}},
      {"fraction for integer",
       kObject,
       "{name: a, count: 2.5}",
       {"count: must be an integer, got 2.5"}},
      {"yes for boolean",
       kObject,
       "{name: a, flag: yes}",
       {"flag: must be of type boolean, got string \"yes\" (yes/no/on/off are strings here: "
        "write true or false)"}},
      {"minimum", kObject, "{name: a, count: 0}", {"count: must be >= 1, got 0"}},
      {"maximum", kObject, "{name: a, count: 11}", {"count: must be <= 10, got 11"}},
      {"int32 range",
       kObject,
       "{name: a, count: 4294967296}",
       {"count: must be <= 10, got 4294967296",
        "count: must fit in a 32-bit integer, got 4294967296"}},
      {"exclusive minimum", kObject, "{name: a, ratio: 0}", {"ratio: must be > 0, got 0"}},
      {"exclusive maximum", kObject, "{name: a, ratio: 1.0}", {"ratio: must be < 1, got 1.0"}},
      {"not a finite number",
       kObject,
       "{name: a, ratio: .nan}",
       {"ratio: must be a finite number, got .nan"}},
      {"minLength 1", kObject, "{name: ''}", {"name: must not be empty"}},
      {"maxLength counts characters, not bytes", kObject, "{name: héllo}", {}},
      {"maxLength", kObject, "{name: abcdef}", {"name: must be at most 5 characters long, got 6"}},
      {"enum with a suggestion",
       kObject,
       "{name: a, color: red}",
       {"color: must be one of \"Red\", \"Green\", got \"red\" (did you mean \"Red\"?)"}},
      {"enum without a near option",
       kObject,
       "{name: a, color: Purple}",
       {"color: must be one of \"Red\", \"Green\", got \"Purple\""}},
      {"pattern",
       kObject,
       "{name: a, code: AB}",
       {"code: must match the pattern ^[A-Z]{3}$, got \"AB\""}},
      {"duration pattern explained in words",
       kObject,
       "{name: a, wait: 5 minutes}",
       {"wait: must be a duration such as 500ms, 5m or 1h30m (units ns, us, ms, s, m, h), got "
        "\"5 minutes\""}},
      {"duration needs a unit",
       kObject,
       "{name: a, wait: 5}",
       {"wait: must be of type string, got integer 5 (a duration needs a unit, e.g. \"500ms\" or "
        "\"5m\")"}},
      {"date-time",
       kObject,
       "{name: a, when: yesterday}",
       {"when: must be an RFC 3339 date-time such as 2024-05-01T12:00:00Z, got \"yesterday\""}},
      {"map values are checked and named by key",
       kObject,
       "{name: a, tags: {a: 1, b: two}}",
       {"tags[b]: must be of type integer, got string \"two\""}},
      {"list bounds and items",
       kObject,
       "{name: a, list: [1, x, 3]}",
       {"list: must have at most 2 items, got 3",
        "list[1]: must be of type integer, got string "
        "\"x\""}},
      {"set duplicates", kObject, "{name: a, set: [a, b, a]}", {"set[2]: duplicate item in a set"}},
      {"map-list duplicate keys",
       kObject,
       "{name: a, entries: [{type: A}, {type: A, value: x}]}",
       {"entries[1]: duplicate entry with type=\"A\""}},
      {"unknown field with a suggestion",
       kObject,
       "{name: a, cuont: 1}",
       {"cuont: unknown field (did you mean \"count\"?)"}},
      {"unknown field without one lists the fields",
       kObject,
       "{name: a, zzzzzzzz: 1}",
       {"zzzzzzzz: unknown field (known fields: name, count, ratio, flag, color, code, when, "
        "wait, tags, list, set, entries, free, maybe, port)"}},
      {"preserve-unknown-fields keeps anything", kObject, "{name: a, free: {x: {y: [1]}}}", {}},
      {"null where not nullable",
       kObject,
       "{name: a, count: null}",
       {"count: must be of type integer, got null"}},
      {"duplicate key", kObject, "{name: a, name: b}", {"name: duplicate key"}},
      {"int-or-string rejects a list",
       kObject,
       "{name: a, port: [1]}",
       {"port: must be an integer or a string, got a list"}},
      {"root of the wrong type", kObject, "[1]", {"must be of type object, got a list"}},
  };
  for (const ValidationCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<OpenApiSchema> schema = Schema(c.schema);
    ASSERT_TRUE(schema.ok()) << schema.status();
    EXPECT_EQ(ErrorStrings(schema->Violations(YAML::Load(c.value))), c.want);
  }
}

TEST(OpenApiSchemaValidate, PathPrefixAndStatus) {
  absl::StatusOr<OpenApiSchema> schema = Schema(
      "type: object\nproperties:\n  policies:\n    type: array\n    items:\n      type: object\n"
      "      properties: {periodSeconds: {type: integer, minimum: 1}}\n");
  ASSERT_TRUE(schema.ok()) << schema.status();
  const YAML::Node value = YAML::Load("policies: [{periodSeconds: 15}, {periodSeconds: 0}]");
  const std::vector<FieldError> errors = schema->Violations(value, "spec.scaleDown");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].ToString(), "spec.scaleDown.policies[1].periodSeconds: must be >= 1, got 0");
  const absl::Status status = schema->Validate(value, "spec.scaleDown");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "spec.scaleDown.policies[1].periodSeconds: must be >= 1, got 0");
  EXPECT_TRUE(schema->Validate(YAML::Load("policies: []")).ok());
}

TEST(OpenApiSchemaValidate, ErrorCountIsCapped) {
  absl::StatusOr<OpenApiSchema> schema = Schema("type: array\nitems: {type: integer}\n");
  ASSERT_TRUE(schema.ok()) << schema.status();
  const std::vector<FieldError> errors = schema->Violations(YAML::Load("[a, b, c, d, e]"), "", 2);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[2].message, "and 3 more errors");
}

// ---- Defaulting ------------------------------------------------------------------------------

TEST(OpenApiSchemaDefaults, TheApiServersRules) {
  const std::string kSchema =
      "type: object\n"
      "properties:\n"
      "  mode: {type: string, default: Auto}\n"
      "  plain:\n"  // no default of its own: its children are defaulted only if it exists
      "    type: object\n"
      "    properties: {a: {type: integer, default: 1}, b: {type: integer}}\n"
      "  withDefault:\n"  // default {}: created when missing, then its children defaulted
      "    type: object\n"
      "    default: {}\n"
      "    properties: {a: {type: integer, default: 2}}\n"
      "  nullable: {type: string, nullable: true, default: x}\n"
      "  noDefault: {type: string}\n"
      "  list:\n"
      "    type: array\n"
      "    default: [{}, {p: 5}]\n"  // defaults inserted are themselves defaulted
      "    items:\n"
      "      type: object\n"
      "      properties: {p: {type: integer, default: 7}, q: {type: integer}}\n"
      "  map:\n"
      "    type: object\n"
      "    additionalProperties:\n"
      "      type: object\n"
      "      properties: {w: {type: integer, default: 3}}\n";
  struct Case {
    std::string name;
    std::string input;
    std::string want;  // Canon() of the expected result
  };
  const std::vector<Case> cases = {
      {"empty object: top-level defaults, objects with default {} and default lists", "{}",
       "{list:[{p:7},{p:5}],mode:'Auto',nullable:'x',withDefault:{a:2}}"},
      {"given values are kept", "{mode: Manual, withDefault: {a: 9}, list: [{q: 1}]}",
       "{list:[{p:7,q:1}],mode:'Manual',nullable:'x',withDefault:{a:9}}"},
      {"an object present without a default gets its children's defaults", "{plain: {}}",
       "{list:[{p:7},{p:5}],mode:'Auto',nullable:'x',plain:{a:1},withDefault:{a:2}}"},
      {"a non-nullable null is defaulted", "{mode: null, withDefault: ~}",
       "{list:[{p:7},{p:5}],mode:'Auto',nullable:'x',withDefault:{a:2}}"},
      {"a non-nullable null without a default is pruned", "{noDefault: null, plain: null}",
       "{list:[{p:7},{p:5}],mode:'Auto',nullable:'x',withDefault:{a:2}}"},
      {"a nullable null is kept, not defaulted", "{nullable: null}",
       "{list:[{p:7},{p:5}],mode:'Auto',nullable:null,withDefault:{a:2}}"},
      {"map values are defaulted", "{map: {k1: {}, k2: {w: 1}}}",
       "{list:[{p:7},{p:5}],map:{k1:{w:3},k2:{w:1}},mode:'Auto',nullable:'x',"
       "withDefault:{a:2}}"},
      {"values of the wrong type are copied for validation to report", "{plain: 5, list: x}",
       "{list:'x',mode:'Auto',nullable:'x',plain:5,withDefault:{a:2}}"},
      {"unknown fields are copied for validation to report", "{extra: {deep: 1}}",
       "{extra:{deep:1},list:[{p:7},{p:5}],mode:'Auto',nullable:'x',withDefault:{a:2}}"},
  };
  absl::StatusOr<OpenApiSchema> schema = Schema(kSchema);
  ASSERT_TRUE(schema.ok()) << schema.status();
  ASSERT_TRUE(schema->CheckStructural().ok()) << schema->CheckStructural();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Canon(schema->ApplyDefaults(YAML::Load(c.input))), c.want);
  }
}

TEST(OpenApiSchemaDefaults, InputAndSchemaAreNotModified) {
  absl::StatusOr<OpenApiSchema> schema = Schema(
      "type: object\nproperties:\n  o:\n    type: object\n    default: {}\n"
      "    properties: {a: {type: integer, default: 1}}\n");
  ASSERT_TRUE(schema.ok()) << schema.status();
  const YAML::Node input = YAML::Load("{x: 1}");
  YAML::Node first = schema->ApplyDefaults(input);
  EXPECT_EQ(Canon(input), "{x:1}");
  first["o"]["a"] = 42;  // writing to the copy must not reach the schema's default
  EXPECT_EQ(Canon(schema->ApplyDefaults(input)), "{o:{a:1},x:1}");
}

// ---- Parsing schemas -------------------------------------------------------------------------

TEST(OpenApiSchemaFromYaml, RejectsWhatItCannotEnforce) {
  struct Case {
    std::string name;
    std::string schema;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"anyOf would be silently ignored", "type: object\nanyOf: [{required: [a]}]",
       "schema anyOf: unsupported keyword"},
      {"CEL rules would be silently ignored",
       "type: object\nx-kubernetes-validations: [{rule: 'self.a > 0'}]",
       "schema x-kubernetes-validations: unsupported keyword"},
      {"a nested unsupported keyword names its path",
       "type: object\nproperties:\n  a: {type: string, $ref: '#/x'}",
       "schema properties[a].$ref: unsupported keyword"},
      {"an unknown type", "type: int", "schema type: unknown type \"int\""},
      {"a pattern std::regex can't compile", "type: string\npattern: '([a-z'",
       "schema pattern: invalid regular expression"},
      {"additionalProperties false is not structural", "type: object\nadditionalProperties: false",
       "schema additionalProperties: must not be false"},
      {"minimum must be a number", "type: integer\nminimum: one",
       "schema minimum: must be a number"},
      {"a schema must be a mapping", "[type, object]", "schema (root): a schema must be a mapping"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<OpenApiSchema> schema = Schema(c.schema);
    ASSERT_FALSE(schema.ok());
    EXPECT_EQ(schema.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(schema.status().message()), HasSubstr(c.want));
  }
}

// ---- Structural checks -----------------------------------------------------------------------

TEST(OpenApiSchemaStructural, TheShippedCrdIsStructuralAndDocumented) {
  const YAML::Node crd = YAML::LoadFile(kCrdPath);
  absl::StatusOr<OpenApiSchema> schema = CrdVersionSchema(crd, "v1alpha1");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_TRUE(schema->CheckStructural().ok()) << schema->CheckStructural();
  EXPECT_THAT(schema->UndocumentedFields(), ::testing::IsEmpty());
  // The names the rest of the project relies on.
  EXPECT_EQ(crd["spec"]["group"].Scalar(), "twinscale.io");
  EXPECT_EQ(crd["spec"]["names"]["kind"].Scalar(), "InferenceAutoscaler");
  EXPECT_EQ(crd["spec"]["names"]["plural"].Scalar(), "inferenceautoscalers");
  EXPECT_EQ(crd["spec"]["names"]["shortNames"][0].Scalar(), "ias");
  EXPECT_EQ(crd["spec"]["scope"].Scalar(), "Namespaced");
  EXPECT_EQ(crd["metadata"]["name"].Scalar(), "inferenceautoscalers.twinscale.io");
  const YAML::Node version = crd["spec"]["versions"][0];
  EXPECT_TRUE(version["served"].as<bool>());
  EXPECT_TRUE(version["storage"].as<bool>());
  EXPECT_TRUE(version["subresources"]["status"].IsMap());
  // Every printer column reads a field the schema declares.
  for (const auto& column : version["additionalPrinterColumns"]) {
    SCOPED_TRACE(column["name"].Scalar());
    std::string path = column["jsonPath"].Scalar();
    ASSERT_EQ(path[0], '.');
    if (path.rfind(".metadata.", 0) == 0) continue;
    std::optional<OpenApiSchema> node = *schema;
    size_t start = 1;
    while (node && start <= path.size()) {
      const size_t dot = path.find('.', start);
      node = node->Property(path.substr(start, dot - start));
      start = dot == std::string::npos ? path.size() + 1 : dot + 1;
    }
    EXPECT_TRUE(node.has_value()) << "no such field " << path;
  }
  EXPECT_FALSE(CrdVersionSchema(crd, "v1").ok());
}

TEST(OpenApiSchemaStructural, BrokenSchemas) {
  struct Case {
    std::string name;
    std::string schema;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"a property without a type", "type: object\nproperties: {a: {description: x}}",
       "properties[a]: type is required"},
      {"the root must be an object", "type: string", "(root): the root must be of type object"},
      {"an array without items", "type: object\nproperties: {a: {type: array}}",
       "properties[a]: an array needs items"},
      {"pattern on an integer", "type: object\nproperties: {a: {type: integer, pattern: x}}",
       "properties[a]: pattern does not apply to type integer"},
      {"minimum on a string", "type: object\nproperties: {a: {type: string, minimum: 1}}",
       "properties[a]: minimum does not apply to type string"},
      {"required names an undeclared property",
       "type: object\nrequired: [b]\nproperties: {a: {type: string}}",
       "(root): required field \"b\" is not a property"},
      {"a default of the wrong type",
       "type: object\nproperties: {a: {type: integer, default: abc}}",
       "properties[a]: invalid default: default: must be of type integer, got string \"abc\""},
      {"a default outside its own bounds",
       "type: object\nproperties: {a: {type: integer, minimum: 1, default: 0}}",
       "properties[a]: invalid default: default: must be >= 1, got 0"},
      {"a default object with unknown fields",
       "type: object\nproperties: {o: {type: object, default: {x: 1}, properties: {y: "
       "{type: integer}}}}",
       "properties[o]: invalid default: default.x: unknown field"},
      {"a default object missing a required child (defaults are validated as written)",
       "type: object\nproperties: {o: {type: object, default: {}, required: [y], properties: {y: "
       "{type: integer, default: 1}}}}",
       "properties[o]: invalid default: default.y: required field is missing"},
      {"a null default", "type: object\nproperties: {a: {type: string, default: null}}",
       "properties[a]: default must not be null"},
      {"an enum value of the wrong type",
       "type: object\nproperties: {a: {type: string, enum: [x, 1]}}",
       "properties[a]: enum[1]: must be of type string, got integer 1"},
      {"properties and additionalProperties together",
       "type: object\nproperties: {a: {type: string}}\nadditionalProperties: {type: string}",
       "(root): properties and additionalProperties are mutually exclusive"},
      {"exclusiveMinimum without minimum",
       "type: object\nproperties: {a: {type: number, exclusiveMinimum: true}}",
       "properties[a]: exclusiveMinimum needs minimum"},
      {"a list-map key neither required nor defaulted",
       "type: object\nproperties:\n  l:\n    type: array\n    x-kubernetes-list-type: map\n"
       "    x-kubernetes-list-map-keys: [k]\n    items: {type: object, properties: {k: {type: "
       "string}}}",
       "properties[l]: list-map key \"k\" must be required or defaulted"},
      {"a default inside metadata",
       "type: object\nproperties: {metadata: {type: object, properties: {name: {type: string, "
       "default: x}}}}",
       "properties[metadata].properties[name]: defaults are not allowed inside metadata"},
      {"metadata restricting more than name",
       "type: object\nproperties: {metadata: {type: object, properties: {labels: {type: "
       "object}}}}",
       "properties[metadata]: metadata must not specify anything other than name and "
       "generateName (found properties[labels])"},
      // kube-apiserver v1.26 refuses this CRD:
      // "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything
      // other than name and generateName".
      {"a description on the root's metadata",
       "type: object\nproperties: {metadata: {type: object, description: Standard object "
       "metadata.}}",
       "properties[metadata]: metadata must not specify anything other than name and "
       "generateName (found description)"},
      {"int32 format on a string", "type: object\nproperties: {a: {type: string, format: int32}}",
       "properties[a]: format int32 needs type integer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<OpenApiSchema> schema = Schema(c.schema);
    ASSERT_TRUE(schema.ok()) << schema.status();
    const absl::Status s = schema->CheckStructural();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.want));
  }
}

TEST(OpenApiSchemaStructural, UndocumentedFieldsAreListed) {
  absl::StatusOr<OpenApiSchema> schema = Schema(
      "type: object\nproperties:\n  a: {type: string, description: documented}\n"
      "  b:\n    type: array\n    items:\n      type: object\n"
      "      properties: {c: {type: string}}\n");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->UndocumentedFields(), (std::vector<std::string>{"b", "b[*].c"}));
}

// ---- Paths and locations ---------------------------------------------------------------------

TEST(OpenApiSchemaPaths, FormatPath) {
  const std::vector<PathElement> path = {
      {PathElement::Kind::kProperty, "policies", 0},
      {PathElement::Kind::kIndex, "", 1},
      {PathElement::Kind::kProperty, "periodSeconds", 0},
  };
  EXPECT_EQ(FormatPath("spec", path), "spec.policies[1].periodSeconds");
  EXPECT_EQ(FormatPath("", path), "policies[1].periodSeconds");
  EXPECT_EQ(FormatPath("m", {{PathElement::Kind::kMapKey, "app", 0}}), "m[app]");
}

TEST(OpenApiSchemaPaths, LocatePathFindsTheDeepestExistingKey) {
  const YAML::Node doc = YAML::Load(
      "a: 1\n"        // line 0 (yaml-cpp marks are 0-based)
      "b:\n"          // line 1
      "  c:\n"        // line 2
      "    - x: 1\n"  // line 3
      "    - x: 2\n"  // line 4
      "      y:\n"    // line 5 (a null value: its own mark points past it)
      "d: 4\n");      // line 6
  using K = PathElement::Kind;
  struct Case {
    std::string name;
    std::vector<PathElement> path;
    int line;
  };
  const std::vector<Case> cases = {
      {"a top-level key", {{K::kProperty, "a", 0}}, 0},
      {"a list item's key",
       {{K::kProperty, "b", 0}, {K::kProperty, "c", 0}, {K::kIndex, "", 1}, {K::kProperty, "x", 0}},
       4},
      {"a null value is found by its key",
       {{K::kProperty, "b", 0}, {K::kProperty, "c", 0}, {K::kIndex, "", 1}, {K::kProperty, "y", 0}},
       5},
      {"a missing field points at its parent",
       {{K::kProperty, "b", 0}, {K::kProperty, "c", 0}, {K::kIndex, "", 0}, {K::kProperty, "z", 0}},
       3},
      {"an index past the end points at the list's key",
       {{K::kProperty, "b", 0}, {K::kProperty, "c", 0}, {K::kIndex, "", 9}},
       2},
      {"the last key", {{K::kProperty, "d", 0}}, 6},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(LocatePath(doc, c.path).line, c.line);
  }
  // Locating must not modify the document (yaml-cpp's operator= writes through).
  EXPECT_EQ(Canon(doc), "{a:1,b:{c:[{x:1},{x:2,y:null}]},d:4}");
}

}  // namespace
}  // namespace twinscale::api
