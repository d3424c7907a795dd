// Label and field selector parsing and matching; see selectors.h. The lexer and parser follow
// k8s.io/apimachinery/pkg/labels/selector.go (tokens, the "expected ..." errors) closely enough
// that a selector the real server accepts is accepted here and matches the same objects.
#include "controller/kube/selectors.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace twinscale::kube {
namespace {

using nlohmann::json;

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// ---- Names --------------------------------------------------------------------------------

bool IsAlnum(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }

// A label value or the name part of a key: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], <= 63.
bool IsQualifiedNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

std::string CheckKey(std::string_view key) {
  std::string_view name = key;
  if (size_t slash = key.find('/'); slash != std::string_view::npos) {
    const std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (!IsDnsSubdomain(prefix)) {
      return absl::StrCat("invalid label key \"", Sv(key),
                          "\": the prefix must be a DNS subdomain (lowercase alphanumerics, "
                          "'-' and '.')");
    }
  }
  if (!IsQualifiedNamePart(name)) {
    return absl::StrCat("invalid label key \"", Sv(key),
                        "\": the name must be 1-63 characters, alphanumeric at both ends, with "
                        "'-', '_' or '.' inside");
  }
  return "";
}

std::string CheckValue(std::string_view value) {
  if (value.empty() || IsQualifiedNamePart(value)) return "";
  return absl::StrCat("invalid label value \"", Sv(value),
                      "\": at most 63 characters, alphanumeric at both ends, with '-', '_' or "
                      "'.' inside");
}

// ---- Lexer --------------------------------------------------------------------------------

enum class Tok {
  kIdent,
  kNot,       // !
  kEq,        // =
  kDoubleEq,  // ==
  kNotEq,     // !=
  kIn,        // in
  kNotIn,     // notin
  kOpen,      // (
  kClose,     // )
  kComma,     // ,
  kGt,        // >
  kLt,        // <
  kEnd,
};

struct Token {
  Tok tok;
  std::string text;
  size_t pos;
};

bool IsSpecial(char c) {
  return c == '!' || c == '=' || c == '(' || c == ')' || c == ',' || c == '<' || c == '>';
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

std::vector<Token> Lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (IsSpace(c)) {
      ++i;
      continue;
    }
    if (IsSpecial(c)) {
      const bool next_eq = i + 1 < s.size() && s[i + 1] == '=';
      if (c == '!' && next_eq) {
        out.push_back({Tok::kNotEq, "!=", i});
        i += 2;
      } else if (c == '=' && next_eq) {
        out.push_back({Tok::kDoubleEq, "==", i});
        i += 2;
      } else {
        const Tok t = c == '!'   ? Tok::kNot
                      : c == '=' ? Tok::kEq
                      : c == '(' ? Tok::kOpen
                      : c == ')' ? Tok::kClose
                      : c == ',' ? Tok::kComma
                      : c == '>' ? Tok::kGt
                                 : Tok::kLt;
        out.push_back({t, std::string(1, c), i});
        ++i;
      }
      continue;
    }
    const size_t start = i;
    while (i < s.size() && !IsSpace(s[i]) && !IsSpecial(s[i])) ++i;
    std::string word(s.substr(start, i - start));
    const Tok t = word == "in" ? Tok::kIn : word == "notin" ? Tok::kNotIn : Tok::kIdent;
    out.push_back({t, std::move(word), start});
  }
  out.push_back({Tok::kEnd, "end of string", s.size()});
  return out;
}

// ---- Parser -------------------------------------------------------------------------------

class LabelParser {
 public:
  explicit LabelParser(std::string_view text) : tokens_(Lex(text)) {}

  absl::StatusOr<std::vector<LabelRequirement>> Parse() {
    std::vector<LabelRequirement> out;
    while (true) {
      const Token& t = Peek();
      if (t.tok == Tok::kEnd) return out;
      if (t.tok != Tok::kIdent && t.tok != Tok::kNot && !IsWord(t)) {
        return Error(t, "expected '!', a label key or the end");
      }
      auto r = ParseRequirement();
      if (!r.ok()) return r.status();
      out.push_back(std::move(*r));
      const Token& sep = Next();
      if (sep.tok == Tok::kEnd) return out;
      if (sep.tok != Tok::kComma) return Error(sep, "expected ',' or the end");
      const Token& after = Peek();
      if (after.tok != Tok::kIdent && after.tok != Tok::kNot && !IsWord(after)) {
        return Error(after, "expected a requirement after ','");
      }
    }
  }

 private:
  static bool IsWord(const Token& t) { return t.tok == Tok::kIn || t.tok == Tok::kNotIn; }
  const Token& Peek() const { return tokens_[index_]; }
  const Token& Next() {
    const Token& t = tokens_[index_];
    if (index_ + 1 < tokens_.size()) ++index_;
    return t;
  }

  static absl::Status Error(const Token& at, std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("labelSelector: at ", at.pos, ": ", Sv(what), ", found '", at.text, "'"));
  }
  static absl::Status Error(size_t pos, std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("labelSelector: at ", pos, ": ", Sv(what)));
  }

  absl::StatusOr<LabelRequirement> ParseRequirement() {
    LabelRequirement r;
    const size_t start = Peek().pos;
    if (Peek().tok == Tok::kNot) {
      Next();
      const Token& key = Next();
      if (key.tok != Tok::kIdent && !IsWord(key))
        return Error(key, "expected a label key after '!'");
      r.key = key.text;
      r.op = LabelRequirement::Op::kDoesNotExist;
      if (std::string e = CheckKey(r.key); !e.empty()) return Error(start, e);
      return r;
    }
    r.key = Next().text;
    if (std::string e = CheckKey(r.key); !e.empty()) return Error(start, e);
    const Token& op = Peek();
    if (op.tok == Tok::kEnd || op.tok == Tok::kComma) {
      r.op = LabelRequirement::Op::kExists;
      return r;
    }
    Next();
    using Op = LabelRequirement::Op;
    switch (op.tok) {
      case Tok::kEq:
        r.op = Op::kEquals;
        break;
      case Tok::kDoubleEq:
        r.op = Op::kDoubleEquals;
        break;
      case Tok::kNotEq:
        r.op = Op::kNotEquals;
        break;
      case Tok::kIn:
        r.op = Op::kIn;
        break;
      case Tok::kNotIn:
        r.op = Op::kNotIn;
        break;
      case Tok::kGt:
        r.op = Op::kGreaterThan;
        break;
      case Tok::kLt:
        r.op = Op::kLessThan;
        break;
      default:
        return Error(op, "expected one of =, ==, !=, in, notin, >, <");
    }
    if (r.op == Op::kIn || r.op == Op::kNotIn) {
      const Token& open = Next();
      if (open.tok != Tok::kOpen)
        return Error(open, absl::StrCat("expected '(' after '", op.text, "'"));
      // "()" is the set holding the empty value, as in labels/selector.go.
      while (true) {
        const Token& v = Peek();
        if (v.tok == Tok::kIdent || IsWord(v)) {
          r.values.push_back(v.text);
          Next();
        } else if (v.tok == Tok::kComma || v.tok == Tok::kClose) {
          r.values.push_back("");
        } else {
          return Error(v, "expected a value, ',' or ')'");
        }
        const Token& sep = Next();
        if (sep.tok == Tok::kClose) break;
        if (sep.tok != Tok::kComma) return Error(sep, "expected ',' or ')'");
      }
      std::sort(r.values.begin(), r.values.end());
      r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
    } else {
      const Token& v = Peek();
      if (v.tok == Tok::kEnd || v.tok == Tok::kComma) {
        r.values.push_back("");
      } else if (v.tok == Tok::kIdent || IsWord(v)) {
        r.values.push_back(v.text);
        Next();
      } else {
        return Error(v, "expected a value");
      }
    }
    for (const std::string& v : r.values) {
      if (std::string e = CheckValue(v); !e.empty()) return Error(start, e);
    }
    if (r.op == Op::kGreaterThan || r.op == Op::kLessThan) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(r.values[0], &n)) {
        return Error(start, absl::StrCat("the value of '", op.text, "' must be an integer, got \"",
                                         r.values[0], "\""));
      }
    }
    return r;
  }

  std::vector<Token> tokens_;
  size_t index_ = 0;
};

const std::string* LabelOf(const json& labels, const std::string& key) {
  if (!labels.is_object()) return nullptr;
  auto it = labels.find(key);
  if (it == labels.end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

void SortByKey(std::vector<LabelRequirement>& reqs) {
  std::stable_sort(
      reqs.begin(), reqs.end(),
      [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
}

}  // namespace

bool LabelRequirement::Matches(const json& labels) const {
  const std::string* v = LabelOf(labels, key);
  auto in_values = [&] {
    return v != nullptr && std::find(values.begin(), values.end(), *v) != values.end();
  };
  switch (op) {
    case Op::kExists:
      return v != nullptr;
    case Op::kDoesNotExist:
      return v == nullptr;
    case Op::kEquals:
    case Op::kDoubleEquals:
    case Op::kIn:
      return in_values();
    case Op::kNotEquals:
    case Op::kNotIn:
      return !in_values();
    case Op::kGreaterThan:
    case Op::kLessThan: {
      int64_t have = 0, want = 0;
      if (v == nullptr || !absl::SimpleAtoi(*v, &have) || !absl::SimpleAtoi(values[0], &want)) {
        return false;
      }
      return op == Op::kGreaterThan ? have > want : have < want;
    }
  }
  return false;
}

std::string LabelRequirement::String() const {
  switch (op) {
    case Op::kExists:
      return key;
    case Op::kDoesNotExist:
      return "!" + key;
    case Op::kEquals:
      return absl::StrCat(key, "=", values[0]);
    case Op::kDoubleEquals:
      return absl::StrCat(key, "==", values[0]);
    case Op::kNotEquals:
      return absl::StrCat(key, "!=", values[0]);
    case Op::kIn:
      return absl::StrCat(key, " in (", absl::StrJoin(values, ","), ")");
    case Op::kNotIn:
      return absl::StrCat(key, " notin (", absl::StrJoin(values, ","), ")");
    case Op::kGreaterThan:
      return absl::StrCat(key, ">", values[0]);
    case Op::kLessThan:
      return absl::StrCat(key, "<", values[0]);
  }
  return key;
}

absl::StatusOr<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelParser parser(text);
  auto reqs = parser.Parse();
  if (!reqs.ok()) return reqs.status();
  LabelSelector s;
  s.requirements_ = std::move(*reqs);
  SortByKey(s.requirements_);
  return s;
}

absl::StatusOr<LabelSelector> LabelSelector::FromLabelSelectorJson(const json& selector) {
  LabelSelector s;
  if (selector.is_null()) return s;
  if (!selector.is_object()) return absl::InvalidArgumentError("selector: must be an object");
  if (auto ml = selector.find("matchLabels"); ml != selector.end() && !ml->is_null()) {
    if (!ml->is_object())
      return absl::InvalidArgumentError("selector.matchLabels: must be an object");
    for (auto it = ml->begin(); it != ml->end(); ++it) {
      if (!it.value().is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("selector.matchLabels[", it.key(), "]: must be a string"));
      }
      LabelRequirement r{it.key(), LabelRequirement::Op::kEquals, {it.value().get<std::string>()}};
      if (std::string e = CheckKey(r.key); !e.empty()) {
        return absl::InvalidArgumentError("selector.matchLabels: " + e);
      }
      if (std::string e = CheckValue(r.values[0]); !e.empty()) {
        return absl::InvalidArgumentError("selector.matchLabels: " + e);
      }
      s.requirements_.push_back(std::move(r));
    }
  }
  if (auto me = selector.find("matchExpressions"); me != selector.end() && !me->is_null()) {
    if (!me->is_array()) {
      return absl::InvalidArgumentError("selector.matchExpressions: must be a list");
    }
    for (size_t i = 0; i < me->size(); ++i) {
      const json& e = (*me)[i];
      const std::string at = absl::StrCat("selector.matchExpressions[", i, "]");
      if (!e.is_object() || !e.contains("key") || !e["key"].is_string() ||
          !e.contains("operator") || !e["operator"].is_string()) {
        return absl::InvalidArgumentError(at + ": needs a string key and operator");
      }
      LabelRequirement r;
      r.key = e["key"].get<std::string>();
      if (std::string err = CheckKey(r.key); !err.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(at, ": ", err));
      }
      const std::string op = e["operator"].get<std::string>();
      using Op = LabelRequirement::Op;
      if (op == "In") {
        r.op = Op::kIn;
      } else if (op == "NotIn") {
        r.op = Op::kNotIn;
      } else if (op == "Exists") {
        r.op = Op::kExists;
      } else if (op == "DoesNotExist") {
        r.op = Op::kDoesNotExist;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(at, ".operator: \"", op, "\" is not a valid label selector operator"));
      }
      const json values = e.value("values", json::array());
      if (!values.is_array()) return absl::InvalidArgumentError(at + ".values: must be a list");
      for (const json& v : values) {
        if (!v.is_string()) return absl::InvalidArgumentError(at + ".values: must be strings");
        r.values.push_back(v.get<std::string>());
      }
      const bool set_op = r.op == Op::kIn || r.op == Op::kNotIn;
      if (set_op && r.values.empty()) {
        return absl::InvalidArgumentError(at + ".values: must be non-empty for In and NotIn");
      }
      if (!set_op && !r.values.empty()) {
        return absl::InvalidArgumentError(at +
                                          ".values: must be empty for Exists and DoesNotExist");
      }
      std::sort(r.values.begin(), r.values.end());
      r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
      s.requirements_.push_back(std::move(r));
    }
  }
  SortByKey(s.requirements_);
  return s;
}

bool LabelSelector::Matches(const json& labels) const {
  for (const LabelRequirement& r : requirements_) {
    if (!r.Matches(labels)) return false;
  }
  return true;
}

std::string LabelSelector::String() const {
  std::vector<std::string> parts;
  for (const LabelRequirement& r : requirements_) parts.push_back(r.String());
  return absl::StrJoin(parts, ",");
}

// ---- Field selectors ------------------------------------------------------------------------

absl::StatusOr<FieldSelector> FieldSelector::Parse(std::string_view text) {
  FieldSelector s;
  size_t i = 0;
  while (i <= text.size()) {
    // One term: up to an unescaped ',' or the end.
    const size_t start = i;
    std::string lhs, rhs;
    std::string* cur = &lhs;
    bool have_op = false;
    bool negate = false;
    while (i < text.size() && text[i] != ',') {
      const char c = text[i];
      if (c == '\\') {
        if (i + 1 >= text.size()) {
          return absl::InvalidArgumentError(
              absl::StrCat("fieldSelector: at ", i, ": a trailing '\\' escapes nothing"));
        }
        *cur += text[i + 1];
        i += 2;
        continue;
      }
      if (!have_op && (c == '=' || (c == '!' && i + 1 < text.size() && text[i + 1] == '='))) {
        have_op = true;
        negate = c == '!';
        i += (c == '!' || (i + 1 < text.size() && text[i + 1] == '=')) ? 2 : 1;
        cur = &rhs;
        continue;
      }
      *cur += c;
      ++i;
    }
    const std::string_view term = text.substr(start, i - start);
    if (!term.empty()) {
      if (!have_op) {
        return absl::InvalidArgumentError(
            absl::StrCat("fieldSelector: at ", start, ": can't understand '", Sv(term),
                         "' (expected field=value, field==value or field!=value)"));
      }
      if (lhs.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("fieldSelector: at ", start, ": a term needs a field name"));
      }
      s.requirements_.push_back({std::move(lhs), negate, std::move(rhs)});
    }
    ++i;  // past the ','
  }
  return s;
}

std::string FieldValue(const json& object, std::string_view path) {
  const json* cur = &object;
  for (absl::string_view part : absl::StrSplit(Sv(path), '.')) {
    if (!cur->is_object()) return "";
    auto it = cur->find(std::string(part));
    if (it == cur->end()) return "";
    cur = &*it;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null() || cur->is_object() || cur->is_array()) return "";
  return cur->dump();
}

bool FieldSelector::Matches(const json& object) const {
  for (const FieldRequirement& r : requirements_) {
    const bool equal = FieldValue(object, r.field) == r.value;
    if (equal == r.negate) return false;
  }
  return true;
}

bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return lower_alnum(c) || c == '-' || c == '.'; });
}

}  // namespace twinscale::kube
