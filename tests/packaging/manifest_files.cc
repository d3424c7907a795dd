// Reading the repository's manifests in tests: see manifest_files.h.
#include "tests/packaging/manifest_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace twinscale::packaging {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

bool OnlyCommentsOrBlank(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (!line.empty() && line[0] != '#') return false;
  }
  return true;
}

}  // namespace

std::vector<YamlDocument> SplitYamlDocuments(absl::string_view text) {
  std::vector<YamlDocument> docs;
  YamlDocument current;
  int line_no = 0;
  auto flush = [&] {
    if (!OnlyCommentsOrBlank(current.text)) docs.push_back(current);
  };
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (absl::StripTrailingAsciiWhitespace(line) == "---") {
      flush();
      current = YamlDocument{"", line_no + 1};
      continue;
    }
    absl::StrAppend(&current.text, line, "\n");
  }
  flush();
  return docs;
}

absl::StatusOr<YAML::Node> ParseYamlDocument(const YamlDocument& doc, absl::string_view source) {
  try {
    return YAML::Load(doc.text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", doc.first_line + e.mark.line, ": ", e.msg));
  }
}

std::vector<std::string> YamlFilesUnder(const std::string& dir,
                                        const std::vector<std::string>& skip) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path rel = fs::relative(it->path(), dir);
    if (it->is_directory()) {
      if (std::find(skip.begin(), skip.end(), rel.generic_string()) != skip.end()) {
        it.disable_recursion_pending();
      }
      continue;
    }
    const std::string ext = it->path().extension().string();
    if (it->is_regular_file() && (ext == ".yaml" || ext == ".yml")) {
      out.push_back(it->path().generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<YamlDocument> MarkdownYamlBlocks(absl::string_view markdown) {
  std::vector<YamlDocument> blocks;
  bool inside = false;
  YamlDocument current;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(markdown, '\n')) {
    ++line_no;
    const absl::string_view stripped = absl::StripAsciiWhitespace(line);
    if (!inside && (stripped == "```yaml" || stripped == "```yml")) {
      inside = true;
      current = YamlDocument{"", line_no + 1};
    } else if (inside && stripped == "```") {
      inside = false;
      blocks.push_back(current);
    } else if (inside) {
      absl::StrAppend(&current.text, line, "\n");
    }
  }
  return blocks;
}

}  // namespace twinscale::packaging
