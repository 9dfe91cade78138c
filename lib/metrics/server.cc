#include "metrics/server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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
    // Debian 12's libcivetweb (1.15) is built without USE_IPV6: our own listener.
    std::unique_ptr<Server> s(new Server());
    s->collect_ = std::move(collect);
    FG_RETURN_IF_ERROR(s->ListenIpv6(l, listen));
    return s;
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
  if (thread_.joinable()) {
    const char x = 0;
    [[maybe_unused]] const ssize_t w = write(wake_[1], &x, 1);
    thread_.join();
  }
  for (int fd : {fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) close(fd);
  }
}

absl::Status Server::ListenIpv6(const Listen& l, const std::string& listen) {
  fd_ = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0)
    return absl::UnavailableError(absl::StrFormat("--metrics %s: no IPv6 socket: %s", listen, strerror(errno)));
  const int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(static_cast<uint16_t>(l.port));
  inet_pton(AF_INET6, l.addr.c_str(), &a.sin6_addr);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0) {
    return absl::UnavailableError(absl::StrFormat("--metrics %s: cannot listen there (%s)", listen, strerror(errno)));
  }
  socklen_t len = sizeof a;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  if (pipe2(wake_, O_CLOEXEC) != 0) return absl::InternalError("--metrics: pipe: " + std::string(strerror(errno)));
  url_ = absl::StrFormat("http://[%s]:%d/metrics", l.addr, ntohs(a.sin6_port));
  thread_ = std::thread([this] { ServeIpv6(); });
  return absl::OkStatus();
}

void Server::ServeIpv6() {
  for (;;) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    if ((p[0].revents & POLLIN) == 0) continue;
    const int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    Answer(conn);
    close(conn);
  }
}

// One request: its head within 8 KiB and 2 s, then the answer, then close.
void Server::Answer(int conn) {
  timeval tv{2, 0};
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string head;
  char buf[1024];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 8192) {
    const ssize_t n = recv(conn, buf, sizeof buf, 0);
    if (n <= 0) return;
    head.append(buf, static_cast<size_t>(n));
  }
  std::string status = "200 OK", type = kContentType, body;
  if (head.rfind("GET /metrics ", 0) == 0 || head.rfind("GET /metrics?", 0) == 0) {
    scrapes_.fetch_add(1, std::memory_order_relaxed);
    body = ToText(collect_());
  } else if (head.rfind("GET ", 0) == 0) {
    status = "404 Not Found", type = "text/plain", body = "only /metrics is served here\n";
  } else {
    status = "405 Method Not Allowed", type = "text/plain", body = "GET /metrics\n";
  }
  const std::string out = absl::StrFormat(
      "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nCache-Control: no-cache\r\nConnection: "
      "close\r\n\r\n%s",
      status, type, body.size(), body);
  for (size_t sent = 0; sent < out.size();) {
    const ssize_t n = send(conn, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

int Server::Handle(mg_connection* conn, void* self) {
  Server& s = *static_cast<Server*>(self);
  s.scrapes_.fetch_add(1, std::memory_order_relaxed);
  const std::string body = ToText(s.collect_());
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-cache\r\n"
            "Connection: close\r\n\r\n",
            kContentType, body.size());
  mg_write(conn, body.data(), body.size());
  return 200;
}

}  // namespace fg::metrics
