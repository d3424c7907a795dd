// PodScraper over cpprestsdk; see pod_scraper.h.
//
// Each scrape is one chain of pplx continuations (request -> check the status -> read the body in
// chunks up to the cap) that ends by filling a shared ScrapeState and notifying it. The calling
// thread waits on that notification for at most `timeout` and cancels the chain when the time is
// up, so the deadline holds whatever the pod does (cpprestsdk's own timeout is only an inactivity
// timer). No continuation blocks (.get() only on tasks already finished): a blocking .get()
// inside a pplx continuation can starve cpprestsdk's shared thread pool, so the blocking wait
// happens on the caller's thread or on one of Read's worker threads.
#include "controller/metrics/pod_scraper.h"

#include <cpprest/http_client.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "controller/metrics/prometheus_text.h"
#include "controller/metrics/vllm_observation.h"

namespace twinscale::metrics {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;
// What the scraper asks for: the 0.0.4 text format (prometheus_client would otherwise answer an
// OpenMetrics-preferring Accept header with OpenMetrics, whose `# EOF` and suffixes differ).
constexpr char kAccept[] = "text/plain;version=0.0.4;q=1,*/*;q=0.1";

// What one scrape's continuation chain leaves for the waiting thread.
struct ScrapeState {
  absl::Mutex mu;
  int http_status ABSL_GUARDED_BY(mu) = 0;
  std::string reason ABSL_GUARDED_BY(mu);  // HTTP reason phrase
  std::string body ABSL_GUARDED_BY(mu);
  bool too_large ABSL_GUARDED_BY(mu) = false;
  std::string transport_error ABSL_GUARDED_BY(mu);  // non-empty: the exchange failed
  absl::Notification done;
};

// Reads `body` into state->body, chunk by chunk, until the end of the body or until more than `cap`
// bytes arrived (then it cancels the exchange: the rest is not read).
pplx::task<void> ReadBounded(concurrency::streams::streambuf<uint8_t> body,
                             std::shared_ptr<ScrapeState> state, size_t cap,
                             std::shared_ptr<pplx::cancellation_token_source> cancel) {
  auto chunk = std::make_shared<std::vector<uint8_t>>(kChunkBytes);
  return body.getn(chunk->data(), chunk->size())
      .then([body, state, cap, cancel, chunk](size_t n) -> pplx::task<void> {
        if (n == 0) return pplx::task_from_result();
        bool stop = false;
        {
          absl::MutexLock lock(&state->mu);
          if (state->body.size() + n > cap) {
            state->too_large = true;
            stop = true;
          } else {
            state->body.append(reinterpret_cast<const char*>(chunk->data()), n);
          }
        }
        if (stop) {
          cancel->cancel();
          return pplx::task_from_result();
        }
        return ReadBounded(body, state, cap, cancel);
      });
}

std::string Describe(const PodTarget& pod) {
  return absl::StrCat("pod ", pod.pod, " (", ScrapeUrl(pod), ")");
}

}  // namespace

std::string ScrapeUrl(const PodTarget& pod) {
  const bool ipv6 = absl::StrContains(pod.ip, ":");
  std::string path = pod.path;
  if (path.empty() || path[0] != '/') path.insert(0, "/");
  return absl::StrCat("http://", ipv6 ? "[" : "", pod.ip, ipv6 ? "]" : "", ":", pod.port, path);
}

PodScraper::PodScraper(const Clock& clock, PodScraperOptions options)
    : clock_(clock), options_(std::move(options)) {
  options_.timeout = std::max(options_.timeout, absl::Milliseconds(1));
  options_.max_concurrency = std::max(options_.max_concurrency, 1);
  options_.max_body_bytes = std::max<int64_t>(options_.max_body_bytes, 1);
}

absl::StatusOr<PodReading> PodScraper::ScrapeOne(const PodTarget& pod) const {
  const std::string who = Describe(pod);
  if (pod.ip.empty()) return absl::UnavailableError(absl::StrCat(who, ": the pod has no IP yet"));
  if (pod.port < 1 || pod.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": port ", pod.port, " is out of range"));
  }
  const size_t cap = static_cast<size_t>(options_.max_body_bytes);
  auto state = std::make_shared<ScrapeState>();
  auto cancel = std::make_shared<pplx::cancellation_token_source>();
  PodReading reading;
  reading.scraped_at = clock_.Now();
  try {
    const std::string url = ScrapeUrl(pod);
    web::http::client::http_client_config config;
    // A backstop only: the deadline below is what callers see.
    config.set_timeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(options_.timeout)) +
                       std::chrono::seconds(1));
    auto client = std::make_shared<web::http::client::http_client>(web::uri(url), config);
    web::http::http_request request(web::http::methods::GET);
    request.headers().add("Accept", kAccept);
    client->request(request, cancel->get_token())
        .then([state, cap, cancel](web::http::http_response response) -> pplx::task<void> {
          // A declared length over the cap fails before any byte of the body is read.
          const bool too_large = response.headers().content_length() > cap;
          {
            absl::MutexLock lock(&state->mu);
            state->http_status = response.status_code();
            state->reason = response.reason_phrase();
            if (state->http_status != web::http::status_codes::OK) {
              return pplx::task_from_result();
            }
            state->too_large = too_large;
          }
          if (too_large) {
            cancel->cancel();
            return pplx::task_from_result();
          }
          return ReadBounded(response.body().streambuf(), state, cap, cancel);
        })
        .then([state, client](pplx::task<void> finished) {
          std::string error;
          try {
            finished.get();
          } catch (const pplx::task_canceled&) {
            error = "cancelled";
          } catch (const std::exception& e) {
            error = e.what();
            if (error.empty()) error = "unknown transport error";
          } catch (...) {
            error = "unknown transport error";
          }
          {
            absl::MutexLock lock(&state->mu);
            state->transport_error = std::move(error);
          }
          state->done.Notify();
        });
  } catch (const web::uri_exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": not a valid URL: ", e.what()));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(who, ": ", e.what()));
  }

  if (!state->done.WaitForNotificationWithTimeout(options_.timeout)) {
    cancel->cancel();
    return absl::DeadlineExceededError(
        absl::StrCat(who, ": no complete answer within ", absl::FormatDuration(options_.timeout)));
  }

  std::string body;
  {
    absl::MutexLock lock(&state->mu);
    if (state->too_large) {
      return absl::UnavailableError(
          absl::StrCat(who, ": the page is larger than ", options_.max_body_bytes, " bytes"));
    }
    if (!state->transport_error.empty()) {
      return absl::UnavailableError(absl::StrCat(who, ": ", state->transport_error));
    }
    if (state->http_status != web::http::status_codes::OK) {
      return absl::UnavailableError(
          absl::StrCat(who, ": HTTP ", state->http_status, " ", state->reason));
    }
    body = std::move(state->body);
  }

  absl::StatusOr<Exposition> exposition = ParsePrometheusText(body);
  if (!exposition.ok()) {
    return absl::Status(exposition.status().code(),
                        absl::StrCat(who, ": ", exposition.status().message()));
  }
  absl::StatusOr<PodObservation> observation =
      ExtractVllmObservation(*exposition, options_.model_name_filter);
  if (!observation.ok()) {
    return absl::Status(observation.status().code(),
                        absl::StrCat(who, ": ", observation.status().message()));
  }
  reading.observation = *std::move(observation);
  return reading;
}

absl::StatusOr<std::vector<PodResult>> PodScraper::Read(const std::vector<PodTarget>& pods) const {
  std::vector<PodResult> results;
  results.reserve(pods.size());
  for (const PodTarget& pod : pods) {
    results.push_back(PodResult{pod.pod, absl::UnknownError("not scraped")});
  }
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < pods.size(); i = next++) {
      results[i].reading = ScrapeOne(pods[i]);
    }
  };
  const size_t workers = std::min(pods.size(), static_cast<size_t>(options_.max_concurrency));
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (size_t w = 1; w < workers; ++w) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running (and this one) do the rest
    }
  }
  work();
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace twinscale::metrics
