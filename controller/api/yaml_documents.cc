// A YAML stream cut into documents: see yaml_documents.h.
#include "controller/api/yaml_documents.h"

namespace twinscale::api {

std::vector<YamlPiece> SplitYamlStream(std::string_view text) {
  const auto is_marker = [](std::string_view line, std::string_view marker) {
    if (line.substr(0, 3) != marker) return false;
    return line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r';
  };
  std::vector<YamlPiece> pieces(1);
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view line = text.substr(start, end - start);
    const std::string_view bare = line.substr(0, line.find_first_of("\r\n"));
    if (is_marker(bare, "---") && !pieces.back().text.empty()) {
      pieces.push_back(YamlPiece{"", line_number});
    }
    if (pieces.back().text.empty()) pieces.back().first_line = line_number;
    pieces.back().text.append(line);
    if (is_marker(bare, "...")) pieces.push_back(YamlPiece{"", line_number + 1});
    ++line_number;
    start = end;
  }
  return pieces;
}

}  // namespace twinscale::api
