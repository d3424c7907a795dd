// Reading the repository's manifests in tests: files, YAML documents, and the InferenceAutoscaler
// manifests a file holds. Shared by the packaging tests (deploy/, charts/, README.md and docs/).
#ifndef TWINSCALE_TESTS_PACKAGING_MANIFEST_FILES_H_
#define TWINSCALE_TESTS_PACKAGING_MANIFEST_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::packaging {

// The whole file; NotFound if it can't be read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// The YAML documents of a multi-document text, split on "---" lines (yaml-cpp 0.7's LoadAll can
// loop on some inputs), each with the 1-based line it starts on. Documents that hold only comments
// and blank lines are left out.
struct YamlDocument {
  std::string text;
  int first_line = 1;
};
std::vector<YamlDocument> SplitYamlDocuments(absl::string_view text);

// Parses a document; InvalidArgument naming `source` and the 1-based line on a syntax error.
absl::StatusOr<YAML::Node> ParseYamlDocument(const YamlDocument& doc, absl::string_view source);

// Regular files under `dir` (recursively) whose names end in .yaml or .yml, sorted; directories
// named in `skip` (relative to `dir`, e.g. "twinscale/templates") are not entered.
std::vector<std::string> YamlFilesUnder(const std::string& dir,
                                        const std::vector<std::string>& skip = {});

// The bodies of the ```yaml fenced code blocks of a markdown text, with the line each body
// starts on.
std::vector<YamlDocument> MarkdownYamlBlocks(absl::string_view markdown);

}  // namespace twinscale::packaging

#endif  // TWINSCALE_TESTS_PACKAGING_MANIFEST_FILES_H_
