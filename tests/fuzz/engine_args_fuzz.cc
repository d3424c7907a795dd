// Fuzzes the vLLM command-line reader (controller/state/engine_args.h: a pod's container command,
// args and env, outside input written by whoever owns the Deployment): any words must parse or
// give a clear error, never crash or hang. Input: words separated by NUL bytes; a word NAME=VALUE
// after a lone "--env" word goes to the container's env instead. Flags that parse must print
// (EngineArgs::ToString) to a command line that parses back to the same settings.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "controller/state/engine_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using twinscale::state::EngineArgs;
  using twinscale::state::ParseVllmArgs;
  std::vector<std::string> words;
  std::map<std::string, std::string> env;
  bool in_env = false;
  std::string cur;
  auto flush = [&] {
    if (cur == "--env") {
      in_env = true;
    } else if (in_env && cur.find('=') != std::string::npos) {
      env[cur.substr(0, cur.find('='))] = cur.substr(cur.find('=') + 1);
    } else {
      words.push_back(cur);
    }
    cur.clear();
  };
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      flush();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  flush();
  (void)twinscale::state::LooksLikeVllm(words);
  auto args = ParseVllmArgs(words, env);
  if (!args.ok()) {
    if (args.status().message().empty()) abort();  // an error must say what is wrong
    return 0;
  }
  std::vector<std::string> printed = {"vllm", "serve", "m"};
  const std::string line = args->ToString();
  size_t start = 0;
  while (start < line.size()) {
    size_t end = line.find(' ', start);
    if (end == std::string::npos) end = line.size();
    printed.push_back(line.substr(start, end - start));
    start = end + 1;
  }
  auto again = ParseVllmArgs(printed);
  if (!again.ok() || !(*again == *args)) abort();
  return 0;
}
