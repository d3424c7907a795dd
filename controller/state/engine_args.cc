// vLLM command lines -> EngineArgs: see engine_args.h.
#include "controller/state/engine_args.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace twinscale::state {
namespace {

// Debian's abseil (20220623) keeps its own string_view type, distinct from std::string_view:
// convert at the calls.
absl::string_view A(std::string_view s) { return absl::string_view(s.data(), s.size()); }
std::string_view S(absl::string_view s) { return std::string_view(s.data(), s.size()); }
std::string_view Strip(std::string_view s) { return S(absl::StripAsciiWhitespace(A(s))); }

// Kubernetes' $(VAR) expansion of command and args (the kubelet's, for env values it knows):
// $$ escapes a $, an unknown or unterminated reference stays as written.
std::string ExpandK8sVars(std::string_view in, const std::map<std::string, std::string>& env) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '$' || i + 1 >= in.size()) {
      out += in[i];
      continue;
    }
    if (in[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (in[i + 1] == '(') {
      const size_t close = in.find(')', i + 2);
      if (close != std::string_view::npos) {
        auto it = env.find(std::string(in.substr(i + 2, close - i - 2)));
        if (it != env.end()) {
          out += it->second;
          i = close;
          continue;
        }
      }
    }
    out += in[i];
  }
  return out;
}

// POSIX-shell word splitting, enough for a container's `sh -c` script: blanks separate words,
// single quotes keep everything, double quotes keep blanks, a backslash escapes the next character
// outside single quotes. Operators (&&, ;, |) become words of their own or stay glued to one; they
// are not flags, so either way they are skipped.
std::vector<std::string> ShellWords(std::string_view s) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      else
        cur += c;
      continue;
    }
    if (c == '\\' && i + 1 < s.size()) {
      cur += s[++i];
      in_word = true;
      continue;
    }
    if (quote == '"') {
      if (c == '"')
        quote = 0;
      else
        cur += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
      continue;
    }
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(std::move(cur));
      cur.clear();
      in_word = false;
      continue;
    }
    cur += c;
    in_word = true;
  }
  if (in_word) words.push_back(std::move(cur));
  return words;
}

// The words vLLM's parser would see: the container's, with shell scripts split.
std::vector<std::string> CommandWords(const std::vector<std::string>& words,
                                      const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (const std::string& w : words) {
    std::string expanded = ExpandK8sVars(w, env);
    const bool script = std::any_of(expanded.begin(), expanded.end(), [](char c) {
      return absl::ascii_isspace(static_cast<unsigned char>(c));
    });
    if (!script) {
      out.push_back(std::move(expanded));
      continue;
    }
    for (std::string& part : ShellWords(expanded)) out.push_back(std::move(part));
  }
  return out;
}

enum class Kind { kInt, kHumanInt, kFraction, kBool };
struct Flag {
  std::string_view name;  // with dashes, without the leading --
  Kind kind;
  int32_t min;  // for integers
};
constexpr Flag kFlags[] = {
    {"max-num-seqs", Kind::kInt, 1},
    {"max-num-batched-tokens", Kind::kInt, 1},
    {"max-model-len", Kind::kHumanInt, 1},
    {"block-size", Kind::kInt, 1},
    {"tensor-parallel-size", Kind::kInt, 1},
    {"long-prefill-token-threshold", Kind::kInt, 0},
    {"gpu-memory-utilization", Kind::kFraction, 0},
    {"enable-prefix-caching", Kind::kBool, 0},
};

const Flag* FindFlag(std::string_view name) {
  for (const Flag& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::Status Set(EngineArgs& a, const Flag& f, std::string_view written, std::string_view value,
                 bool negated) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("vLLM flag ", A(written), ": \"", A(value), "\" ", A(why)));
  };
  if (f.kind == Kind::kBool) {
    a.enable_prefix_caching = !negated;
    return absl::OkStatus();
  }
  if (f.kind == Kind::kFraction) {
    double v = 0;
    const std::string_view t = Strip(value);
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v)) {
      return bad("is not a number");
    }
    if (!(v > 0 && v <= 1)) return bad("is not a fraction in (0, 1]");
    a.gpu_memory_utilization = v;
    return absl::OkStatus();
  }
  std::optional<int64_t> n;
  if (f.kind == Kind::kHumanInt) {
    const std::string_view t = Strip(value);
    if (t == "auto" || t == "-1") return absl::OkStatus();  // vLLM: the model's own length
    n = ParseHumanReadableInt(t);
  } else {
    int64_t v = 0;
    const std::string_view t = Strip(value);
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc() && end == t.data() + t.size() && !t.empty()) n = v;
  }
  if (!n.has_value()) return bad("is not an integer");
  if (*n < f.min || *n > std::numeric_limits<int32_t>::max()) {
    const std::string why = absl::StrCat("is out of range (at least ", f.min, ")");
    return bad(why);
  }
  const int32_t v = static_cast<int32_t>(*n);
  if (f.name == "max-num-seqs")
    a.max_num_seqs = v;
  else if (f.name == "max-num-batched-tokens")
    a.max_num_batched_tokens = v;
  else if (f.name == "max-model-len")
    a.max_model_len = v;
  else if (f.name == "block-size")
    a.block_size = v;
  else if (f.name == "tensor-parallel-size")
    a.tensor_parallel_size = v;
  else if (f.name == "long-prefill-token-threshold")
    a.long_prefill_token_threshold = v;
  return absl::OkStatus();
}

}  // namespace

bool EngineArgs::empty() const { return *this == EngineArgs{}; }

std::string EngineArgs::ToString() const {
  std::string out;
  auto add = [&out](std::string_view flag, const auto& v) {
    if (!v.has_value()) return;
    if (!out.empty()) out += ' ';
    absl::StrAppend(&out, A(flag), " ", *v);
  };
  add("--max-num-seqs", max_num_seqs);
  add("--max-num-batched-tokens", max_num_batched_tokens);
  add("--max-model-len", max_model_len);
  add("--block-size", block_size);
  add("--tensor-parallel-size", tensor_parallel_size);
  add("--long-prefill-token-threshold", long_prefill_token_threshold);
  if (gpu_memory_utilization.has_value()) {
    // The shortest text that reads back as the same double ("0.85", not "0.84999999999999998").
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), *gpu_memory_utilization);
    if (!out.empty()) out += ' ';
    absl::StrAppend(&out, "--gpu-memory-utilization ",
                    ec == std::errc() ? std::string(buf, end) : std::string("?"));
  }
  if (enable_prefix_caching.has_value()) {
    if (!out.empty()) out += ' ';
    out += *enable_prefix_caching ? "--enable-prefix-caching" : "--no-enable-prefix-caching";
  }
  return out;
}

std::optional<int64_t> ParseHumanReadableInt(std::string_view text) {
  const std::string_view t = Strip(text);
  if (t.empty()) return std::nullopt;
  const char last = t.back();
  int64_t decimal = 0, binary = 0;
  switch (last) {
    case 'k':
      decimal = 1'000;
      break;
    case 'm':
      decimal = 1'000'000;
      break;
    case 'g':
      decimal = 1'000'000'000;
      break;
    case 't':
      decimal = 1'000'000'000'000;
      break;
    case 'K':
      binary = int64_t{1} << 10;
      break;
    case 'M':
      binary = int64_t{1} << 20;
      break;
    case 'G':
      binary = int64_t{1} << 30;
      break;
    case 'T':
      binary = int64_t{1} << 40;
      break;
    default:
      break;
  }
  auto digits = [](std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (decimal == 0 && binary == 0) {
    // A plain integer, optionally signed (Python's int()).
    std::string_view body = t;
    if (body.front() == '-' || body.front() == '+') body.remove_prefix(1);
    if (!digits(body)) return std::nullopt;
    int64_t v = 0;
    const char* begin = t.data() + (t.front() == '+' ? 1 : 0);
    auto [end, ec] = std::from_chars(begin, t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
    return v;
  }
  const std::string_view number = t.substr(0, t.size() - 1);
  const size_t dot = number.find('.');
  const bool has_fraction = dot != std::string_view::npos;
  if (!digits(has_fraction ? number.substr(0, dot) : number)) return std::nullopt;
  if (has_fraction && !digits(number.substr(dot + 1))) return std::nullopt;
  if (binary != 0) {
    if (has_fraction) return std::nullopt;  // vLLM refuses decimals with binary suffixes
    int64_t v = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
    if (v > std::numeric_limits<int64_t>::max() / binary) return std::nullopt;
    return v * binary;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
  const double scaled = v * static_cast<double>(decimal);
  if (!(scaled < 9.2e18)) return std::nullopt;
  return static_cast<int64_t>(scaled);  // int(float(number) * mult) truncates, as here
}

bool LooksLikeVllm(const std::vector<std::string>& words) {
  for (const std::string& w : CommandWords(words, {})) {
    if (w == "vllm" || absl::EndsWith(w, "/vllm") || absl::StartsWith(w, "vllm.entrypoints")) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<EngineArgs> ParseVllmArgs(const std::vector<std::string>& words,
                                         const std::map<std::string, std::string>& env) {
  const std::vector<std::string> w = CommandWords(words, env);
  EngineArgs args;
  for (size_t i = 0; i < w.size(); ++i) {
    std::string_view word = w[i];
    std::string name;
    if (word == "-tp" || absl::StartsWith(A(word), "-tp=")) {
      name = "tensor-parallel-size";
      word.remove_prefix(3);
    } else if (absl::StartsWith(A(word), "--") && word.size() > 2) {
      word.remove_prefix(2);
      const size_t eq = word.find('=');
      name = absl::StrReplaceAll(A(word.substr(0, eq)), {{"_", "-"}});
      word = eq == std::string_view::npos ? std::string_view() : word.substr(eq);
    } else {
      continue;  // a value, the program, a subcommand or a model name
    }
    bool negated = false;
    const Flag* f = FindFlag(name);
    if (f == nullptr && absl::StartsWith(name, "no-")) {
      f = FindFlag(std::string_view(name).substr(3));
      negated = f != nullptr && f->kind == Kind::kBool;
      if (!negated) f = nullptr;
    }
    const std::string written = w[i].substr(0, w[i].find('='));
    const bool inline_value = absl::StartsWith(A(word), "=");
    if (f == nullptr) continue;  // not modelled: its value, if any, is skipped as a non-flag word
    if (f->kind == Kind::kBool) {
      if (inline_value) {
        return absl::InvalidArgumentError(
            absl::StrCat("vLLM flag ", written, " takes no value (got \"", w[i], "\")"));
      }
      absl::Status s = Set(args, *f, written, "", negated);
      if (!s.ok()) return s;
      continue;
    }
    std::string_view value;
    if (inline_value) {
      value = word.substr(1);
    } else if (i + 1 < w.size()) {
      value = w[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("vLLM flag ", written, " has no value"));
    }
    absl::Status s = Set(args, *f, written, value, false);
    if (!s.ok()) return s;
  }
  return args;
}

}  // namespace twinscale::state
