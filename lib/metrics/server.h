// metrics/server.h: the /metrics HTTP endpoint (civetweb, one thread).
//
// Debian 12's civetweb is built without IPv6: an IPv6 address is served by
// our own listener instead (one thread, one connection at a time, 2 s to
// send a request, GET /metrics only), so `[::1]:9464` works everywhere.
//
// Each scrape calls `collect` on civetweb's thread and answers with the text
// exposition. `collect` must not block on the data path: fabricgen's reads
// per-lcore counters with relaxed loads (metrics/hub.h).
//
//   auto s = fg::metrics::Server::Start("127.0.0.1:9464", [&] { return hub.Collect(); });
//   printf("%s\n", (*s)->url().c_str());   // http://127.0.0.1:9464/metrics
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
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
  // `listen`: as ParseListen reads it.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const std::string& listen, Collect collect);
  ~Server();

  const std::string& url() const { return url_; }  // http://ADDR:PORT/metrics
  uint64_t scrapes() const { return scrapes_; }

 private:
  Server() = default;
  static int Handle(mg_connection* conn, void* self);
  // The IPv6 listener when civetweb has none: a bound socket and its thread.
  absl::Status ListenIpv6(const Listen& l, const std::string& listen);
  void ServeIpv6();
  void Answer(int conn);
  mg_context* ctx_ = nullptr;
  int fd_ = -1;
  int wake_[2] = {-1, -1};  // written by the destructor to end ServeIpv6
  std::thread thread_;
  Collect collect_;
  std::string url_;
  std::atomic<uint64_t> scrapes_{0};
};

}  // namespace fg::metrics
