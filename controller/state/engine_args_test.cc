// ParseVllmArgs: the command lines platform teams write for vLLM pods (vllm serve, the OpenAI
// api_server module, sh -c wrappers, $(VAR) from env), vLLM's human-readable integers, and clear
// errors for values vLLM itself would refuse.
#include "controller/state/engine_args.h"

#include <gtest/gtest.h>

namespace twinscale::state {
namespace {

TEST(EngineArgsTest, VllmServeWithEveryModelledFlag) {
  auto a = ParseVllmArgs({"vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-num-seqs",
                          "128", "--max-num-batched-tokens=16384", "--max-model-len", "8192",
                          "--block-size", "32", "--tensor-parallel-size", "2",
                          "--long-prefill-token-threshold", "2048", "--gpu-memory-utilization",
                          "0.85", "--no-enable-prefix-caching", "--port", "8000"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->max_num_seqs, 128);
  EXPECT_EQ(a->max_num_batched_tokens, 16384);
  EXPECT_EQ(a->max_model_len, 8192);
  EXPECT_EQ(a->block_size, 32);
  EXPECT_EQ(a->tensor_parallel_size, 2);
  EXPECT_EQ(a->long_prefill_token_threshold, 2048);
  EXPECT_EQ(a->gpu_memory_utilization, 0.85);
  EXPECT_EQ(a->enable_prefix_caching, false);
  EXPECT_EQ(
      a->ToString(),
      "--max-num-seqs 128 --max-num-batched-tokens 16384 --max-model-len 8192 --block-size 32 "
      "--tensor-parallel-size 2 --long-prefill-token-threshold 2048 "
      "--gpu-memory-utilization 0.85 --no-enable-prefix-caching");
}

TEST(EngineArgsTest, UnderscoresShortFlagsAndTheLastOccurrence) {
  // vLLM's FlexibleArgumentParser takes --max_num_seqs for --max-num-seqs; -tp is
  // --tensor-parallel-size; argparse keeps the last value given.
  auto a = ParseVllmArgs({"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m",
                          "--max_num_seqs=64", "-tp", "4", "--max-num-seqs", "96",
                          "--enable-prefix-caching"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->max_num_seqs, 96);
  EXPECT_EQ(a->tensor_parallel_size, 4);
  EXPECT_EQ(a->enable_prefix_caching, true);
  EXPECT_FALSE(a->max_model_len.has_value());  // not given: vLLM's default, which the spec knows
  EXPECT_TRUE(LooksLikeVllm({"python3", "-m", "vllm.entrypoints.openai.api_server"}));
}

TEST(EngineArgsTest, ShellWrappersAndKubernetesVariables) {
  // A common Deployment: command sh -c with a script; args from env through $(VAR).
  const std::map<std::string, std::string> env = {{"MAX_LEN", "32k"}, {"SEQS", "256"}};
  auto a = ParseVllmArgs(
      {"/bin/sh", "-c",
       "pip list | grep vllm && exec vllm serve \"$MODEL\" --max-model-len $(MAX_LEN) "
       "--max-num-seqs=$(SEQS) --served-model-name 'llama 8b'"},
      env);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->max_model_len, 32000);
  EXPECT_EQ(a->max_num_seqs, 256);
  EXPECT_TRUE(LooksLikeVllm({"/bin/sh", "-c", "exec vllm serve m"}));
  EXPECT_TRUE(LooksLikeVllm({"/usr/local/bin/vllm", "serve", "m"}));
  EXPECT_FALSE(LooksLikeVllm({"nginx", "-g", "daemon off;"}));
  // $$ escapes; an unknown variable stays as written, and vLLM would then refuse it.
  auto unknown = ParseVllmArgs({"vllm", "serve", "m", "--max-num-seqs", "$(NOT_SET)"}, env);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "vLLM flag --max-num-seqs: \"$(NOT_SET)\" is not an integer");
}

TEST(EngineArgsTest, HumanReadableIntegersAsVllmReadsThem) {
  // vLLM's human_readable_int: lower case decimal, upper case binary, decimals only with lower.
  EXPECT_EQ(ParseHumanReadableInt("8192"), 8192);
  EXPECT_EQ(ParseHumanReadableInt("1k"), 1000);
  EXPECT_EQ(ParseHumanReadableInt("1K"), 1024);
  EXPECT_EQ(ParseHumanReadableInt("25.6k"), 25600);
  EXPECT_EQ(ParseHumanReadableInt("128K"), 131072);
  EXPECT_EQ(ParseHumanReadableInt("1m"), 1000000);
  EXPECT_EQ(ParseHumanReadableInt(" 2M "), 2097152);
  EXPECT_EQ(ParseHumanReadableInt("1.5K"), std::nullopt);
  EXPECT_EQ(ParseHumanReadableInt("k"), std::nullopt);
  EXPECT_EQ(ParseHumanReadableInt("8x"), std::nullopt);
  EXPECT_EQ(ParseHumanReadableInt("1e3"), std::nullopt);
  EXPECT_EQ(ParseHumanReadableInt(""), std::nullopt);
  EXPECT_EQ(ParseHumanReadableInt("99999999999999999999T"), std::nullopt);
  // -1 / auto: the model's own context length, i.e. not set.
  auto a = ParseVllmArgs({"vllm", "serve", "m", "--max-model-len", "auto"});
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->max_model_len.has_value());
}

TEST(EngineArgsTest, ValuesVllmWouldRefuseAreErrorsNamingTheFlag) {
  struct Case {
    std::vector<std::string> words;
    std::string message;
  };
  const Case cases[] = {
      {{"vllm", "serve", "m", "--max-num-seqs", "0"},
       "vLLM flag --max-num-seqs: \"0\" is out of range (at least 1)"},
      {{"vllm", "serve", "m", "--max-model-len=1.5K"},
       "vLLM flag --max-model-len: \"1.5K\" is not an integer"},
      {{"vllm", "serve", "m", "--gpu-memory-utilization", "1.2"},
       "vLLM flag --gpu-memory-utilization: \"1.2\" is not a fraction in (0, 1]"},
      {{"vllm", "serve", "m", "--gpu_memory_utilization", "high"},
       "vLLM flag --gpu_memory_utilization: \"high\" is not a number"},
      {{"vllm", "serve", "m", "--block-size"}, "vLLM flag --block-size has no value"},
      {{"vllm", "serve", "m", "--enable-prefix-caching=false"},
       "vLLM flag --enable-prefix-caching takes no value (got \"--enable-prefix-caching=false\")"},
      {{"vllm", "serve", "m", "--max-num-batched-tokens", "99999999999"},
       "vLLM flag --max-num-batched-tokens: \"99999999999\" is out of range (at least 1)"},
  };
  for (const Case& c : cases) {
    auto a = ParseVllmArgs(c.words);
    ASSERT_FALSE(a.ok()) << c.message;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(a.status().message(), c.message);
  }
}

TEST(EngineArgsTest, NothingModelledIsAnEmptyResultNotAnError) {
  auto a = ParseVllmArgs({"vllm", "serve", "m", "--port", "8000", "--seed", "-1"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->empty());
  EXPECT_EQ(a->ToString(), "");
}

}  // namespace
}  // namespace twinscale::state
