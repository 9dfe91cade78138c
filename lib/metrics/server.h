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

// Where to listen: "PORT" (127.0.0.1), "A.B.C.D:PORT" or "[IPv6]:PORT",
// numeric addresses only; port 0 picks a free one.
struct Listen {
  std::string addr;  // without brackets
  int port = 0;
  bool ipv6 = false;
};
absl::StatusOr<Listen> ParseListen(const std::string& listen);

class Server {
 public:
  using Collect = std::function<std::vector<MetricFamily>()>;
  // `listen`: as ParseListen reads it. An IPv6 address needs a civetweb
  // built with IPv6 (Debian 12's is not: a clear error then).
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
