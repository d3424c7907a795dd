// Test helpers for the fake API server's tests: a blocking HTTP client over cpprestsdk (plain or
// TLS, optional client certificate and CA), a watch reader that delivers events as they arrive,
// and running commands (kubectl, the fake_apiserver binary). Temporary directories and
// certificates come from tests/util (temp_dir.h, test_pki.h).
#ifndef TWINSCALE_TESTS_FAKE_APISERVER_TEST_HTTP_H_
#define TWINSCALE_TESTS_FAKE_APISERVER_TEST_HTTP_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace twinscale::fake_apiserver::testing {

struct TlsClientConfig {
  std::string ca_file;    // verify the server against this CA ("" : no TLS options)
  std::string cert_file;  // client certificate ("" : none)
  std::string key_file;
};

struct HttpResult {
  int code = 0;       // 0 when the request failed before an answer (see error)
  std::string error;  // transport error text
  std::string body;
  nlohmann::json json;                         // the body parsed (discarded value if not JSON)
  std::map<std::string, std::string> headers;  // names in lower case
};

// One HTTP request to `base_url` + `path_and_query`; never throws.
HttpResult Request(const std::string& base_url, const std::string& method,
                   const std::string& path_and_query, const std::string& body = "",
                   const std::string& content_type = "application/json",
                   const std::map<std::string, std::string>& headers = {},
                   const TlsClientConfig& tls = {}, absl::Duration timeout = absl::Seconds(10));

inline HttpResult Get(const std::string& base, const std::string& path) {
  return Request(base, "GET", path);
}
inline HttpResult Post(const std::string& base, const std::string& path, const nlohmann::json& b) {
  return Request(base, "POST", path, b.dump());
}
inline HttpResult Put(const std::string& base, const std::string& path, const nlohmann::json& b) {
  return Request(base, "PUT", path, b.dump());
}
inline HttpResult MergePatch(const std::string& base, const std::string& path,
                             const nlohmann::json& b) {
  return Request(base, "PATCH", path, b.dump(), "application/merge-patch+json");
}

// A watch request read on its own thread: each line of the body becomes an event in arrival
// order.
class WatchReader {
 public:
  WatchReader(const std::string& base_url, const std::string& path_and_query,
              const TlsClientConfig& tls = {});
  ~WatchReader();

  // The HTTP status (waits for the headers up to `timeout`; 0 if none came).
  int Code(absl::Duration timeout = absl::Seconds(5));
  // The next event, or nullopt if the stream ended or `timeout` passed first.
  std::optional<nlohmann::json> Next(absl::Duration timeout = absl::Seconds(5));
  // Waits up to `timeout` for the body to end. True if it ended (cleanly or not).
  bool WaitEnd(absl::Duration timeout = absl::Seconds(5));
  // Whether the body ended with a transport error (a cut connection) rather than cleanly.
  bool EndedWithError();
  // The raw bytes of a non-200 answer.
  std::string ErrorBody();

 private:
  void Run(std::string base_url, std::string path, TlsClientConfig tls);

  std::mutex mu_;
  std::condition_variable cv_;
  int code_ = 0;
  bool headers_ = false;
  bool ended_ = false;
  bool error_ = false;
  std::string error_body_;
  std::deque<nlohmann::json> events_;
  struct Cancel;
  std::shared_ptr<Cancel> cancel_;
  std::thread thread_;
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};
// Runs `command` through /bin/sh, capturing its output.
CommandResult Run(const std::string& command);
// Whether `program` is on PATH.
bool HaveProgram(const std::string& program);
void WriteFile(const std::string& path, const std::string& text);

}  // namespace twinscale::fake_apiserver::testing

#endif  // TWINSCALE_TESTS_FAKE_APISERVER_TEST_HTTP_H_
