#include "metrics/server.h"

#include <civetweb.h>

#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace fg::metrics {
namespace {

std::once_flag g_init;

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const std::string& listen, Collect collect) {
  // "PORT" alone binds to loopback only: an endpoint is never exposed by accident.
  std::string addr = "127.0.0.1", port = listen;
  if (const size_t colon = listen.rfind(':'); colon != std::string::npos) {
    addr = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  int port_no = 0;
  if (!absl::SimpleAtoi(port, &port_no) || port_no < 0 || port_no > 65535 || addr.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--metrics %s: expected [ADDR:]PORT (e.g. 9464 or 0.0.0.0:9464)", listen));
  }
  std::call_once(g_init, [] { mg_init_library(0); });
  std::unique_ptr<Server> s(new Server());
  s->collect_ = std::move(collect);
  const std::string ports = absl::StrFormat("%s:%d", addr, port_no);
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
  s->url_ = absl::StrFormat("http://%s:%d/metrics", addr, n > 0 ? bound[0].port : port_no);
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
