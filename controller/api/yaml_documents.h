// A multi-document YAML stream cut into its documents, each with the line it starts on, so that
// each can be parsed alone (YAML::Load) and its messages still give the whole input's lines.
// Shared by the InferenceAutoscaler loader (spec_loader.h) and `twinscale plan`'s review files.
//
// The stream is cut before each line that starts with the document marker "---" and after each
// line that starts with "..." (followed by whitespace or nothing), as kubectl's YAML reader does;
// YAML forbids both markers at the start of a line inside any scalar, so this never cuts a value.
// Callers parse each piece with YAML::Load: yaml-cpp 0.7's LoadAll can loop forever, allocating,
// on some malformed input (fixed upstream after 0.7, jbeder/yaml-cpp#1319).
//
// Pure; thread-safe.
#ifndef TWINSCALE_CONTROLLER_API_YAML_DOCUMENTS_H_
#define TWINSCALE_CONTROLLER_API_YAML_DOCUMENTS_H_

#include <string>
#include <string_view>
#include <vector>

namespace twinscale::api {

struct YamlPiece {
  std::string text;
  int first_line = 0;  // 0-based line of the input where the piece starts
};

// The pieces, in order (one empty piece for an empty input).
std::vector<YamlPiece> SplitYamlStream(std::string_view text);

}  // namespace twinscale::api

#endif  // TWINSCALE_CONTROLLER_API_YAML_DOCUMENTS_H_
