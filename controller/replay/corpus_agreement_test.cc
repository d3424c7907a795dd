// docs/architecture.md "Performance targets": the fast decision (the twin as the controller runs
// it: a small sample of replicas, more only where the verdict is uncertain, one seed) equals,
// within one replica, a full-fleet, 5-seed what-if. Checked here on 20 entries of the committed
// corpus, evenly spaced through it (so over every trace, rate and kind of moment); decision_bench's
// BM_CorpusAgreement checks the whole corpus.
#include "controller/replay/corpus_agreement.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <sstream>

namespace twinscale::replay {
namespace {

TEST(CorpusAgreementTest, FastDecisionWithinOneReplicaOfTheExactOne) {
  std::ifstream f("tests/data/decisions/corpus.jsonl");
  ASSERT_TRUE(f) << "run from the repository root";
  std::stringstream text;
  text << f.rdbuf();
  absl::StatusOr<std::vector<CorpusEntry>> corpus = ParseCorpus(text.str());
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  ASSERT_GE(corpus->size(), 20u);
  std::vector<CorpusEntry> subset;
  for (size_t i = 0; i < 20; ++i) subset.push_back((*corpus)[i * corpus->size() / 20]);

  absl::StatusOr<sim::ProfileRegistry> profiles = sim::ProfileRegistry::LoadEmbedded();
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  const AgreementOptions options;
  absl::StatusOr<AgreementReport> report = CheckAgreement(subset, *profiles, options);
  ASSERT_TRUE(report.ok()) << report.status();
  std::cout << FormatAgreement(*report, subset);
  EXPECT_GE(report->within_one_share, 0.95);
  EXPECT_EQ(report->entries.size(), subset.size());
}

}  // namespace
}  // namespace twinscale::replay
