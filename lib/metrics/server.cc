#include "metrics/server.h"

#include <arpa/inet.h>
#include <civetweb.h>

#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "base/status.h"

namespace fg::metrics {
namespace {

std::once_flag g_init;

}  // namespace

absl::StatusOr<Listen> ParseListen(const std::string& listen) {
  const auto bad = [&listen] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--metrics %s: expected [ADDR:]PORT, ADDR numeric (e.g. 9464, 0.0.0.0:9464 or [::1]:9464; PORT 0..65535)",
        listen));
  };
  // "PORT" alone binds to loopback only: an endpoint is never exposed by accident.
  Listen l{.addr = "127.0.0.1", .port = 0, .ipv6 = false};
  std::string port = listen;
  if (!listen.empty() && listen[0] == '[') {
    const size_t close = listen.find("]:");
    if (close == std::string::npos) return bad();
    l.addr = listen.substr(1, close - 1);
    l.ipv6 = true;
    port = listen.substr(close + 2);
  } else if (const size_t colon = listen.rfind(':'); colon != std::string::npos) {
    if (listen.find(':') != colon) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--metrics %s: an IPv6 address goes in brackets, then the port: [%s]:PORT", listen, listen.substr(0, colon)));
    }
    l.addr = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  in6_addr a6{};
  in_addr a4{};
  const bool numeric =
      l.ipv6 ? inet_pton(AF_INET6, l.addr.c_str(), &a6) == 1 : inet_pton(AF_INET, l.addr.c_str(), &a4) == 1;
  if (!numeric || !absl::SimpleAtoi(port, &l.port) || l.port < 0 || l.port > 65535) return bad();
  return l;
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const std::string& listen, Collect collect) {
  FG_ASSIGN_OR_RETURN(const Listen l, ParseListen(listen));
  std::call_once(g_init, [] { mg_init_library(0); });
  if (l.ipv6 && mg_check_feature(8) == 0) {
    // Debian 12's libcivetweb (1.15) is built without USE_IPV6: say so
    // rather than fail to listen.
    return absl::InvalidArgumentError(absl::StrFormat(
        "--metrics %s: the installed civetweb (%s) was built without IPv6 support; listen on an IPv4 address "
        "(e.g. 127.0.0.1:%d), or build against a civetweb with IPv6",
        listen, mg_version(), l.port));
  }
  const std::string host = l.ipv6 ? "[" + l.addr + "]" : l.addr;
  std::unique_ptr<Server> s(new Server());
  s->collect_ = std::move(collect);
  const std::string ports = absl::StrFormat("%s:%d", host, l.port);
  const char* options[] = {"listening_ports", ports.c_str(), "num_threads", "1", nullptr};
  mg_callbacks callbacks{};
  s->ctx_ = mg_start(&callbacks, s.get(), options);
  if (s->ctx_ == nullptr) {
    return absl::UnavailableError(
        absl::StrFormat("--metrics %s: cannot listen there (in use, or no such address)", listen));
  }
  mg_set_request_handler(s->ctx_, "/metrics", &Server::Handle, s.get());
  mg_server_port bound[4];
  const int n = mg_get_server_ports(s->ctx_, 4, bound);
  s->url_ = absl::StrFormat("http://%s:%d/metrics", host, n > 0 ? bound[0].port : l.port);
  return s;
}

Server::~Server() {
  if (ctx_ != nullptr) mg_stop(ctx_);
}

int Server::Handle(mg_connection* conn, void* self) {
  Server& s = *static_cast<Server*>(self);
  ++s.scrapes_;  // one civetweb thread: no race
  const std::string body = ToText(s.collect_());
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-cache\r\n"
            "Connection: close\r\n\r\n",
            kContentType, body.size());
  mg_write(conn, body.data(), body.size());
  return 200;
}

}  // namespace fg::metrics
