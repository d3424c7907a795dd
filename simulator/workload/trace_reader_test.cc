// Tests for the trace readers: hand-written snippets with hand-computed nanosecond values, tables
// of bad inputs (each saying why it is bad and which line the error must name), format detection,
// and the shipped traces against the figures in /work/shared/traces/README.md. Run from the repo
// root (ctest does), so tests/data/traces/... resolves.
#include "simulator/workload/trace_reader.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simulator/workload/trace.h"

namespace twinscale::sim {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSecond = 1'000'000'000;

std::vector<int64_t> ArrivalsNs(const Trace& t) {
  std::vector<int64_t> v;
  for (const RequestSpec& r : t.requests) v.push_back(r.arrival.nanos());
  return v;
}

void ExpectNormalised(const Trace& t) {
  ASSERT_FALSE(t.requests.empty());
  EXPECT_EQ(t.requests.front().arrival.nanos(), 0);
  for (size_t i = 0; i < t.requests.size(); ++i) {
    EXPECT_EQ(t.requests[i].id, i);
    if (i > 0) {
      EXPECT_GE(t.requests[i].arrival, t.requests[i - 1].arrival);
    }
  }
}

TraceReadOptions NoJitter() {
  TraceReadOptions o;
  o.mooncake_jitter = false;
  return o;
}

// A bad input: the text, why it is bad, and the 1-based line the error must name (0 when the
// error is about the file as a whole: "<name>: ...").
struct BadCase {
  std::string why;
  std::string text;
  int line;
  std::string says;  // a fragment the message must contain
};

void ExpectError(const absl::StatusOr<Trace>& got, const BadCase& c) {
  ASSERT_FALSE(got.ok()) << "parsed " << got->requests.size() << " requests";
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(got.status().message());
  const std::string prefix = c.line > 0 ? absl::StrCat("t:", c.line, ": ") : "t: ";
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
  EXPECT_NE(message.find(c.says), std::string::npos) << message;
}

// ---- Azure --------------------------------------------------------------------------------------

TEST(AzureCsv, TimestampFormsToExactNanoseconds) {
  struct Case {
    std::string name;
    std::string rows;  // after the header
    std::vector<int64_t> want_ns;
  };
  const Case cases[] = {
      // 2023 release, 7 fractional digits (100 ns resolution), no zone:
      // 04.0319600 - 03.9799600 = 0.0520000 s; 18:18:00.0000001 - 18:17:03.9799600 = 56.0200401 s.
      {"seven digits, no zone",
       "2023-11-16 18:17:03.9799600,4808,10\n"
       "2023-11-16 18:17:04.0319600,3180,8\n"
       "2023-11-16 18:18:00.0000001,110,27\n",
       {0, 52'000'000, 56'020'040'100}},
      // 2024 release, 6 digits with +00:00: 1.500001 - 0.046 = 1.454001 s;
      // 23:59:59.999999 - 00:00:00.046 = 86,399.953999 s.
      {"six digits with zone",
       "2024-05-10 00:00:00.046000+00:00,100,5\n"
       "2024-05-10 00:00:01.500001+00:00,200,6\n"
       "2024-05-10 23:59:59.999999+00:00,300,7\n",
       {0, 1'454'001'000, 86'399'953'999'000}},
      // Whole seconds: 1 min 5 s; the next midnight is 86,400 s.
      {"no fraction",
       "2024-05-10 00:00:00,1,1\n"
       "2024-05-10 00:01:05,2,2\n"
       "2024-05-11 00:00:00,3,3\n",
       {0, 65 * kSecond, 86'400 * kSecond}},
      // 23:59:59.5 on Dec 31 to 00:00:00.25 on Jan 1 is 0.75 s; Feb 28 to Mar 1 2024 crosses the
      // leap day: 2 days = 172,800 s.
      {"across a year end",
       "2023-12-31 23:59:59.5,1,1\n2024-01-01 00:00:00.25,1,1\n",
       {0, 750'000'000}},
      {"across a leap day",
       "2024-02-28 12:00:00,1,1\n2024-03-01 12:00:00,1,1\n",
       {0, 172'800 * kSecond}},
      // Zones: 02:00+02:00, 23:30-00:30 (previous day) and 00:00Z are the same instant.
      {"zone offsets",
       "2024-05-10 02:00:00+02:00,1,1\n2024-05-09 23:30:00-00:30,2,2\n"
       "2024-05-10 00:00:00.5Z,3,3\n2024-05-10T00:00:00Z,4,4\n",
       {0, 0, 0, 500'000'000}},
      // Nine digits are kept; a tenth (below a nanosecond) is dropped.
      {"nanosecond fraction",
       "2024-05-10 00:00:00,1,1\n2024-05-10 00:00:00.1234567891,1,1\n",
       {0, 123'456'789}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Trace> t =
        ParseAzureCsv("TIMESTAMP,ContextTokens,GeneratedTokens\n" + c.rows, "t");
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(ArrivalsNs(*t), c.want_ns);
    ExpectNormalised(*t);
  }
}

TEST(AzureCsv, ColumnsByNameLengthsAndOrder) {
  // The multimodal release inserts NumImages; columns may come in any order.
  absl::StatusOr<Trace> t = ParseAzureCsv(
      "TIMESTAMP,NumImages,ContextTokens,GeneratedTokens\n"
      "2024-05-10 00:00:00.000000+00:00,2,1500,80\n",
      "t");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->requests.size(), 1u);
  EXPECT_EQ(t->requests[0].prompt_tokens, 1500);
  EXPECT_EQ(t->requests[0].output_tokens, 80);
  EXPECT_TRUE(t->requests[0].prefix_hashes.empty());
  EXPECT_EQ(t->source, "t");

  t = ParseAzureCsv("GeneratedTokens,TIMESTAMP,ContextTokens\n7,2024-05-10 00:00:00,9\n", "t");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->requests[0].prompt_tokens, 9);
  EXPECT_EQ(t->requests[0].output_tokens, 7);
}

TEST(AzureCsv, ZeroTokensClampToOneAndRowsAreSortedStably) {
  // Rows out of time order: sorted by time, ties kept in file order, then ids renumbered.
  absl::StatusOr<Trace> t = ParseAzureCsv(
      "\xEF\xBB\xBFTIMESTAMP,ContextTokens,GeneratedTokens\r\n"
      "2024-05-10 00:00:02,30,3\r\n"
      "2024-05-10 00:00:01,0,0\r\n"
      "2024-05-10 00:00:02,40,4\r\n"
      "\r\n\r\n",
      "t");
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectNormalised(*t);
  EXPECT_EQ(ArrivalsNs(*t), (std::vector<int64_t>{0, kSecond, kSecond}));
  EXPECT_EQ(t->requests[0].prompt_tokens, 1);  // 0 clamped
  EXPECT_EQ(t->requests[0].output_tokens, 1);
  EXPECT_EQ(t->requests[1].prompt_tokens, 30);
  EXPECT_EQ(t->requests[2].prompt_tokens, 40);
  // One row (line 3, after the BOM'd header on line 1) is earlier than the row before it.
  EXPECT_EQ(t->rows_out_of_order, 1);
  EXPECT_EQ(t->first_out_of_order_line, 3);
}

TEST(TraceOrder, RowsEarlierThanTheRowBeforeThemAreCountedWithTheFirstLine) {
  // Lines 4 and 6 go back in time (line 5 ties line 4's predecessor: not backwards); equal
  // timestamps are in order.
  absl::StatusOr<Trace> t = ParseAzureCsv(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2024-05-10 00:00:05,1,1\n"
      "2024-05-10 00:00:05,1,1\n"
      "2024-05-10 00:00:01,1,1\n"
      "2024-05-10 00:00:03,1,1\n"
      "2024-05-10 00:00:02,1,1\n",
      "t");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows_out_of_order, 2);
  EXPECT_EQ(t->first_out_of_order_line, 4);
  absl::StatusOr<Trace> b = ParseBurstGptCsv(
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
      "1.0,m,5,5,10,x\n"
      "2.0,m,5,5,10,x\n"
      "0.5,m,5,5,10,x\n",
      "b", {});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->rows_out_of_order, 1);
  EXPECT_EQ(b->first_out_of_order_line, 4);
  absl::StatusOr<Trace> m = ParseMooncakeJsonl(
      "{\"timestamp\": 10, \"input_length\": 1, \"output_length\": 1}\n"
      "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n",
      "m", NoJitter());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows_out_of_order, 1);
  EXPECT_EQ(m->first_out_of_order_line, 2);
  // In order: nothing to say.
  absl::StatusOr<Trace> sorted = ParseAzureCsv(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:01,1,1\n"
      "2024-05-10 00:00:01,1,1\n2024-05-10 00:00:02,1,1\n",
      "s");
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(sorted->rows_out_of_order, 0);
  EXPECT_EQ(sorted->first_out_of_order_line, 0);
}

TEST(AzureCsv, BadInputsNameTheLine) {
  const std::string h = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  const std::string ok = "2023-11-16 18:17:03.9799600,10,10\n";
  const BadCase cases[] = {
      {"empty file", "", 0, "no requests"},
      {"header only", h, 0, "no requests"},
      {"header lacks GeneratedTokens", "TIMESTAMP,ContextTokens\n" + ok, 1, "GeneratedTokens"},
      {"header after a blank line lacks TIMESTAMP", "\nTime,ContextTokens,GeneratedTokens\n", 2,
       "TIMESTAMP"},
      {"letters in a token count", h + "2023-11-16 18:17:03.9799600,12x,5\n", 2, "bad number"},
      {"negative output on the third line", h + ok + "2023-11-16 18:17:04,10,-5\n", 3,
       "negative GeneratedTokens"},
      {"empty token field", h + "2023-11-16 18:17:03,,5\n", 2, "ContextTokens"},
      {"token count above 2^31", h + "2023-11-16 18:17:03,3000000000,5\n", 2, "too large"},
      {"too few fields", h + "2023-11-16 18:17:03,5\n", 2, "expected 3 fields"},
      {"too many fields", h + "2023-11-16 18:17:03,5,5,5\n", 2, "expected 3 fields"},
      {"month 13", h + "2023-13-16 18:17:03,1,1\n", 2, "no such date"},
      {"February 30", h + "2024-02-30 18:17:03,1,1\n", 2, "no such date"},
      {"hour 24", h + "2023-11-16 24:00:00,1,1\n", 2, "out of range"},
      {"slashes in the date", h + "2023/11/16 18:17:03,1,1\n", 2, "YYYY-MM-DD"},
      {"a time zone name", h + "2023-11-16 18:17:03 UTC,1,1\n", 2, "unexpected text"},
      {"an impossible offset", h + "2023-11-16 18:17:03+25:00,1,1\n", 2, "zone"},
      {"a decimal point without digits", h + "2023-11-16 18:17:03.,1,1\n", 2, "decimal point"},
      {"year before 1970", h + "1969-12-31 23:59:59,1,1\n", 2, "year"},
      {"date only", h + "2023-11-16,1,1\n", 2, "TIMESTAMP"},
      {"unterminated quote", h + "\"2023-11-16 18:17:03,1,1\n", 2, "quote"},
      {"blank lines do not shift the count", h + "\n\n" + ok + "x,1,1\n", 5, "TIMESTAMP"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.why);
    ExpectError(ParseAzureCsv(c.text, "t"), c);
  }
}

// ---- BurstGPT -----------------------------------------------------------------------------------

constexpr char kBurstGpt[] =
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,ChatGPT,1087,0,1087,Conversation log\n"  // failed: 0 response tokens
    "118.5,GPT-4,417,217,634,Conversation log\n"
    "130.25,ChatGPT,0,300,300,API log\n";  // 0 request tokens: clamped to 1

TEST(BurstGptCsv, SkipsFailedRequestsUnlessAsked) {
  // Relative to the first row (5 s): 0, 113.5 s, 125.25 s; the failed row at 40 s is skipped.
  absl::StatusOr<Trace> t = ParseBurstGptCsv(kBurstGpt, "t", TraceReadOptions{});
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectNormalised(*t);
  EXPECT_EQ(ArrivalsNs(*t), (std::vector<int64_t>{0, 113'500 * kMs, 125'250 * kMs}));
  EXPECT_EQ(t->requests[0].prompt_tokens, 472);
  EXPECT_EQ(t->requests[0].output_tokens, 18);
  EXPECT_EQ(t->requests[2].prompt_tokens, 1);
  EXPECT_EQ(t->requests[2].output_tokens, 300);

  TraceReadOptions keep;
  keep.include_failed = true;
  t = ParseBurstGptCsv(kBurstGpt, "t", keep);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ArrivalsNs(*t), (std::vector<int64_t>{0, 40 * kSecond, 113'500 * kMs, 125'250 * kMs}));
  EXPECT_EQ(t->requests[1].prompt_tokens, 1087);
  EXPECT_EQ(t->requests[1].output_tokens, 1);  // a failed request kept with one output token
}

TEST(BurstGptCsv, BadInputsNameTheLine) {
  const std::string h = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";
  const BadCase cases[] = {
      {"header lacks Response tokens", "Timestamp,Model,Request tokens\n1,a,2\n", 1,
       "Response tokens"},
      {"negative timestamp", h + "-1,ChatGPT,1,1,2,x\n", 2, "negative Timestamp"},
      {"letter O for zero in the timestamp", h + "1O5,ChatGPT,1,1,2,x\n", 2, "bad number"},
      {"NaN timestamp", h + "nan,ChatGPT,1,1,2,x\n", 2, "bad number"},
      {"negative response tokens on line 3", h + "1,a,1,1,2,x\n2,a,1,-1,0,x\n", 3,
       "negative Response tokens"},
      {"fractional request tokens", h + "1,a,1.5,1,2,x\n", 2, "Request tokens"},
      {"missing fields", h + "1,a,1\n", 2, "expected 6 fields"},
      {"only failed requests", h + "1,a,1,0,1,x\n", 0, "no requests"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.why);
    ExpectError(ParseBurstGptCsv(c.text, "t", TraceReadOptions{}), c);
  }
}

// ---- Mooncake -----------------------------------------------------------------------------------

constexpr char kMooncake[] =
    R"({"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [0, 1]}
{"timestamp": 0, "input_length": 600, "output_length": 20, "hash_ids": [0, 2]}
{"timestamp": 3000, "input_length": 512, "output_length": 30, "hash_ids": [3]}
{"timestamp": 6001, "input_length": 0, "output_length": 0, "hash_ids": []}
)";

TEST(MooncakeJsonl, WithoutJitterKeepsMillisecondsAndHashes) {
  absl::StatusOr<Trace> t = ParseMooncakeJsonl(kMooncake, "t", NoJitter());
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectNormalised(*t);
  EXPECT_EQ(ArrivalsNs(*t), (std::vector<int64_t>{0, 0, 3000 * kMs, 6001 * kMs}));
  EXPECT_EQ(t->requests[0].prompt_tokens, 1000);
  EXPECT_EQ(t->requests[1].output_tokens, 20);
  EXPECT_EQ(t->requests[0].prefix_hashes, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(t->requests[1].prefix_hashes, (std::vector<uint64_t>{0, 2}));
  EXPECT_EQ(t->requests[2].prefix_hashes, (std::vector<uint64_t>{3}));
  EXPECT_TRUE(t->requests[3].prefix_hashes.empty());
  EXPECT_EQ(t->requests[3].prompt_tokens, 1);  // zero lengths clamped
  EXPECT_EQ(t->requests[3].output_tokens, 1);
}

// 20 quantized timestamps 3 s apart with 50 requests each; input_length identifies the request.
std::string ManyGroups() {
  std::string text;
  for (int g = 0; g < 20; ++g) {
    for (int i = 0; i < 50; ++i) {
      absl::StrAppend(&text, "{\"timestamp\": ", g * 3000, ", \"input_length\": ", g * 50 + i + 1,
                      ", \"output_length\": 5}\n");
    }
  }
  return text;
}

TEST(MooncakeJsonl, JitterStaysInsideTheQuantumAndIsSeeded) {
  const std::string text = ManyGroups();
  const int64_t q = 3 * kSecond;
  TraceReadOptions o;  // jitter on, 3 s quantum
  o.seed = 99;
  absl::StatusOr<Trace> t = ParseMooncakeJsonl(text, "t", o);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->requests.size(), 1000u);
  ExpectNormalised(*t);
  // Request with input_length n came from timestamp ts = ((n - 1) / 50) * 3 s and was placed at
  // ts + j, j uniform in [0, q); normalisation then subtracted the smallest j of group 0. So
  // d = arrival - ts = j - min_j lies in (-q, q), and all d fit in one window of width q
  // starting at -min_j <= 0: max(d) - min(d) < q, with min(d) in (-q, 0].
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  std::map<int, std::pair<int64_t, int64_t>> group_range;
  for (const RequestSpec& r : t->requests) {
    const int g = (r.prompt_tokens - 1) / 50;
    const int64_t d = r.arrival.nanos() - g * q;
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    auto [it, fresh] = group_range.try_emplace(g, d, d);
    it->second.first = std::min(it->second.first, d);
    it->second.second = std::max(it->second.second, d);
  }
  EXPECT_LT(hi - lo, q);
  EXPECT_LE(lo, 0);
  EXPECT_GT(lo, -q);
  // 50 uniform points spread over most of the quantum: P(range < 0.7 q) = 50 * 0.7^49 - 49 * 0.7^50
  // < 1.4e-6 per group.
  for (const auto& [g, range] : group_range) {
    EXPECT_GT(range.second - range.first, 7 * q / 10) << "group " << g;
  }
  // Groups are exactly one quantum apart, so [ts, ts + q) windows are disjoint: the groups follow
  // one another in time order, each in one block.
  for (size_t i = 1; i < t->requests.size(); ++i) {
    EXPECT_LE((t->requests[i - 1].prompt_tokens - 1) / 50, (t->requests[i].prompt_tokens - 1) / 50);
  }
  absl::StatusOr<Trace> again = ParseMooncakeJsonl(text, "t", o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ArrivalsNs(*again), ArrivalsNs(*t));
  o.seed = 100;
  absl::StatusOr<Trace> other = ParseMooncakeJsonl(text, "t", o);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(ArrivalsNs(*other), ArrivalsNs(*t));
}

TEST(MooncakeJsonl, JitterNeedsAPositiveQuantum) {
  TraceReadOptions o;
  o.mooncake_quantum = SimDuration::Zero();
  absl::StatusOr<Trace> t = ParseMooncakeJsonl(kMooncake, "t", o);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  o.mooncake_jitter = false;  // the quantum is only read for jitter
  EXPECT_TRUE(ParseMooncakeJsonl(kMooncake, "t", o).ok());
}

TEST(MooncakeJsonl, BadInputsNameTheLine) {
  const std::string ok = R"({"timestamp": 0, "input_length": 10, "output_length": 5})"
                         "\n";
  const BadCase cases[] = {
      {"unquoted keys are not JSON", "{timestamp: 0}\n", 1, "invalid JSON"},
      {"truncated line",
       ok + R"({"timestamp": 0, "input_len)"
            "\n",
       2, "invalid JSON"},
      {"two objects on one line", ok + ok.substr(0, ok.size() - 1) + ok, 2, "invalid JSON"},
      {"an array, not an object", "[1, 2]\n", 1, "expected a JSON object"},
      {"missing input_length",
       ok + R"({"timestamp": 0, "output_length": 5})"
            "\n",
       2, "missing \"input_length\""},
      {"missing timestamp",
       R"({"input_length": 1, "output_length": 5})"
       "\n",
       1, "missing \"timestamp\""},
      {"negative output_length", R"({"timestamp": 0, "input_length": 1, "output_length": -5})", 1,
       "negative \"output_length\""},
      {"fractional input_length", R"({"timestamp": 0, "input_length": 1.5, "output_length": 5})", 1,
       "must be an integer"},
      {"timestamp as a string", R"({"timestamp": "0", "input_length": 1, "output_length": 5})", 1,
       "must be a number"},
      {"negative timestamp", R"({"timestamp": -3000, "input_length": 1, "output_length": 5})", 1,
       "negative \"timestamp\""},
      {"input_length above 2^31",
       R"({"timestamp": 0, "input_length": 4294967296, "output_length": 5})", 1, "too large"},
      {"hash_ids not an array",
       R"({"timestamp": 0, "input_length": 1, "output_length": 5, "hash_ids": 3})", 1,
       "\"hash_ids\" must be an array"},
      {"negative hash id",
       R"({"timestamp": 0, "input_length": 1, "output_length": 5, "hash_ids": [1, -2]})", 1,
       "\"hash_ids\"[1]"},
      {"bad line after a blank line", ok + "\n" + "nope\n", 3, "invalid JSON"},
      {"only blank lines", "\n  \n\n", 0, "no requests"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.why);
    ExpectError(ParseMooncakeJsonl(c.text, "t", NoJitter()), c);
  }
}

// ---- Formats, detection and files
// -----------------------------------------------------------------

TEST(TraceFormat, ParsesNamesAnyCase) {
  EXPECT_EQ(*ParseTraceFormat("auto"), TraceFormat::kAuto);
  EXPECT_EQ(*ParseTraceFormat("azure"), TraceFormat::kAzure);
  EXPECT_EQ(*ParseTraceFormat("Mooncake"), TraceFormat::kMooncake);
  EXPECT_EQ(*ParseTraceFormat("BURSTGPT"), TraceFormat::kBurstGpt);
  for (const char* bad : {"", "csv", "azure ", "sharegpt"}) {
    EXPECT_EQ(ParseTraceFormat(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ReadTraceFile, DetectsEachFormatFromContent) {
  const std::string dir = "tests/data/traces/testdata/";
  // Azure 2024 multimodal (CRLF): 0.046 s, 1.500001 s, 2 s -> 0, 1.454001 s, 1.954 s.
  absl::StatusOr<Trace> azure = ReadTraceFile(dir + "azure_2024_multimodal.csv", {});
  ASSERT_TRUE(azure.ok()) << azure.status();
  EXPECT_EQ(ArrivalsNs(*azure), (std::vector<int64_t>{0, 1'454'001'000, 1'954'000'000}));
  EXPECT_EQ(azure->requests[1].output_tokens, 1);  // GeneratedTokens 0 clamped
  EXPECT_EQ(azure->source, dir + "azure_2024_multimodal.csv");

  absl::StatusOr<Trace> burst = ReadTraceFile(dir + "burstgpt_sample.csv", {});
  ASSERT_TRUE(burst.ok()) << burst.status();
  EXPECT_EQ(burst->requests.size(), 3u);  // the failed row skipped

  absl::StatusOr<Trace> moon = ReadTraceFile(dir + "mooncake_sample.jsonl", NoJitter());
  ASSERT_TRUE(moon.ok()) << moon.status();
  EXPECT_EQ(ArrivalsNs(*moon), (std::vector<int64_t>{0, 0, 3000 * kMs, 6001 * kMs}));

  // An explicit format overrides detection: the Mooncake file read as Azure fails on line 1.
  TraceReadOptions as_azure;
  as_azure.format = TraceFormat::kAzure;
  absl::StatusOr<Trace> wrong = ReadTraceFile(dir + "mooncake_sample.jsonl", as_azure);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(wrong.status().message()).find("mooncake_sample.jsonl:1: "),
            std::string::npos)
      << wrong.status();
}

TEST(ReadTraceFile, UndetectableContentAndMissingFiles) {
  absl::StatusOr<Trace> t = ParseTrace("\n\nid,prompt,output\n1,2,3\n", "t", {});
  ExpectError(t, {"a CSV header of no known format", "", 3, "cannot detect"});
  absl::StatusOr<Trace> missing = ReadTraceFile("tests/data/traces/no_such_file.csv", {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_NE(std::string(missing.status().message()).find("no_such_file.csv"), std::string::npos);
}

// ---- The shipped traces -------------------------------------------------------------------------

TEST(ShippedTraces, AzureConversation) {
  absl::StatusOr<Trace> t = ReadTraceFile("tests/data/traces/AzureLLMInferenceTrace_conv.csv", {});
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectNormalised(*t);
  // README: 19,366 rows, input mean 1,155 (p99 4,142), output mean 211 (p99 601), peak 507
  // req/min. First row 18:15:46.6805900, last 19:14:08.4025270: 58 min 21.7219370 s.
  const TraceSummary s = Summarize(*t);
  EXPECT_EQ(s.requests, 19'366);
  EXPECT_EQ(t->requests.back().arrival.nanos(), 3'501'721'937'000);
  EXPECT_NEAR(s.prompt_mean, 1155, 1);
  EXPECT_NEAR(s.output_mean, 211, 1);
  EXPECT_EQ(s.prompt_p99, 4142);
  EXPECT_EQ(s.output_p99, 601);
  EXPECT_DOUBLE_EQ(s.peak_minute_rps, 507.0 / 60);
}

TEST(ShippedTraces, AzureCode) {
  absl::StatusOr<Trace> t = ReadTraceFile("tests/data/traces/AzureLLMInferenceTrace_code.csv", {});
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectNormalised(*t);
  // README: 8,819 rows; input mean 2,048 (p99 7,436), output mean 28 (p99 252); 12 of 58 minutes
  // empty; 67 requests in one second. First row 18:17:03.9799600, last 19:14:19.9280160:
  // 57 min 15.9480560 s.
  const TraceSummary s = Summarize(*t);
  EXPECT_EQ(s.requests, 8'819);
  EXPECT_EQ(t->requests.back().arrival.nanos(), 3'435'948'056'000);
  EXPECT_NEAR(s.prompt_mean, 2048, 1);
  EXPECT_NEAR(s.output_mean, 28, 1);
  EXPECT_EQ(s.prompt_p99, 7436);
  EXPECT_EQ(s.output_p99, 252);
  std::set<int64_t> minutes;
  std::map<int64_t, int> per_second;
  for (const RequestSpec& r : t->requests) {
    minutes.insert(r.arrival.nanos() / (60 * kSecond));
    ++per_second[r.arrival.nanos() / kSecond];
  }
  EXPECT_EQ(58 - static_cast<int>(minutes.size()), 12);
  int busiest = 0;
  for (const auto& [sec, n] : per_second) busiest = std::max(busiest, n);
  EXPECT_EQ(busiest, 67);
  // "Peak minute 4.2x the mean" over 58 minutes: 8,819 / 58 = 152 per minute.
  EXPECT_NEAR(s.peak_minute_rps * 60 / (8'819.0 / 58), 4.2, 0.1);
}

TEST(ShippedTraces, Mooncake) {
  const std::string path = "tests/data/traces/mooncake_conversation_trace.jsonl";
  absl::StatusOr<Trace> t = ReadTraceFile(path, NoJitter());
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectNormalised(*t);
  // README: 12,031 rows, input mean 12,035 (p99 85,401), output mean 343; last timestamp
  // 3,536,999 ms; the first request has hash ids 0..13 (6,758 tokens = 14 blocks of 512).
  const TraceSummary s = Summarize(*t);
  EXPECT_EQ(s.requests, 12'031);
  EXPECT_EQ(t->requests.back().arrival.nanos(), 3'536'999 * kMs);
  EXPECT_NEAR(s.prompt_mean, 12'035, 1);
  EXPECT_NEAR(s.output_mean, 343, 1);
  EXPECT_EQ(s.prompt_p99, 85'401);
  ASSERT_EQ(t->requests[0].prefix_hashes.size(), 14u);
  EXPECT_EQ(t->requests[0].prefix_hashes[13], 13u);
  // Flat 144-247 req/min.
  EXPECT_GE(s.peak_minute_rps * 60, 144);
  EXPECT_LE(s.peak_minute_rps * 60, 247);

  // With jitter (the default) the span moves by less than one quantum either way.
  absl::StatusOr<Trace> j = ReadTraceFile(path, {});
  ASSERT_TRUE(j.ok()) << j.status();
  ExpectNormalised(*j);
  EXPECT_EQ(j->requests.size(), 12'031u);
  EXPECT_NEAR(static_cast<double>(j->requests.back().arrival.nanos()), 3'536'999.0 * kMs,
              3.0 * kSecond);
  // Jitter breaks the ~10-request ties: nearly every arrival is now distinct.
  const std::vector<int64_t> arrivals = ArrivalsNs(*j);
  const std::set<int64_t> distinct(arrivals.begin(), arrivals.end());
  EXPECT_GT(distinct.size(), 12'000u);
}

}  // namespace
}  // namespace twinscale::sim
