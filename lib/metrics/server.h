// metrics/server.h: the /metrics HTTP endpoint (civetweb, one thread).
//
// Each scrape calls `collect` on civetweb's thread and answers with the text
// exposition. `collect` must not block on the data path: fabricgen's reads
// per-lcore counters with relaxed loads (metrics/hub.h).
//
//   auto s = fg::metrics::Server::Start("127.0.0.1:9464", [&] { return hub.Collect(); });
//   printf("%s\n", (*s)->url().c_str());   // http://127.0.0.1:9464/metrics
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "metrics/exposition.h"

struct mg_context;
struct mg_connection;

namespace fg::metrics {

class Server {
 public:
  using Collect = std::function<std::vector<MetricFamily>()>;
  // `listen`: "PORT" (bound to 127.0.0.1) or "ADDR:PORT"; port 0 picks a free one.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const std::string& listen, Collect collect);
  ~Server();

  const std::string& url() const { return url_; }  // http://ADDR:PORT/metrics
  uint64_t scrapes() const { return scrapes_; }

 private:
  Server() = default;
  static int Handle(mg_connection* conn, void* self);
  mg_context* ctx_ = nullptr;
  Collect collect_;
  std::string url_;
  uint64_t scrapes_ = 0;
};

}  // namespace fg::metrics
