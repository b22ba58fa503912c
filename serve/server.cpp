#include "serve/server.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <sys/socket.h>

#include <algorithm>
#include <chrono>

#include "serve/http_error.hpp"
#include "serve/request_json.hpp"

namespace xg::serve {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void reply_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  if (status == 503) res.set_header("Retry-After", "1");
  res.set_content(json_text({{"error", message}, {"error_type", error_type(status)}}), "application/json");
}

// What httplib refuses itself has no body: say it in JSON too.
std::string status_message(const httplib::Request& req, int status) {
  switch (status) {
    case 404: return fmt::format("no endpoint {} {}; GET /openapi.json lists them", req.method,
                                 req.path.size() <= 80 ? req.path : req.path.substr(0, 80) + "...");
    case 413: return "the request body is larger than the server takes (--max-body-bytes)";
    case 400: return "malformed HTTP request";
    default: return fmt::format("HTTP {}", status);
  }
}

// A path as the metrics label it: the server's own paths, every other one "other" (a label per
// path a client makes up would grow the metrics without bound).
std::string known_path(const std::string& path) {
  const bool known = std::find(kModelEndpoints.begin(), kModelEndpoints.end(), path) != kModelEndpoints.end() ||
                     path == "/health" || path == "/info" || path == "/metrics" || path == "/openapi.json";
  return known ? path : "other";
}

}  // namespace

Server::Server(inference::Pipeline& pipeline, const std::string& model_dir, const ServerOptions& options)
    : pipeline_(pipeline), options_(options), batcher_(options.batching, &metrics_),
      endpoints_(pipeline, options.limits, model_dir), http_(std::make_unique<httplib::Server>()) {
  metrics_.set_queue_depth([this] { return batcher_.depth(); });
  const size_t threads = options_.connection_threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(options_.read_timeout_s, 0);
  http_->set_write_timeout(options_.write_timeout_s, 0);
  http_->set_keep_alive_timeout(options_.keep_alive_s);
  http_->set_keep_alive_max_count(1000);
  http_->set_tcp_nodelay(true);
  http_->set_socket_options([this](int fd) {
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // what httplib's default options set
    listen_fd_ = fd;
  });
  add_routes();
}

Server::~Server() {
  shutdown();
  batcher_.stop();
}

int Server::bind() {
  const int port = options_.port == 0 ? http_->bind_to_any_port(options_.host) : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
  if (port < 0) throw std::runtime_error(fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)",
                                                     options_.host, options_.port));
  // httplib listens with a backlog of 5: a burst of connections (64 clients starting at once)
  // would overflow it and wait for SYN retransmits, a second or more. Listening again on the
  // socket only raises the backlog.
  if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
  bound_ = true;
  return port;
}

void Server::listen() {
  if (!bound_) bind();
  http_->listen_after_bind();  // returns after stop(), once the connection threads are joined
  batcher_.stop();
}

void Server::shutdown() { http_->stop(); }

void Server::add_routes() {
  for (const std::string& path : kModelEndpoints) {
    // The body through a reader: httplib's own limit holds for a Content-Length but neither for
    // chunked bodies nor for what a Content-Encoding inflates to; this one counts what arrives.
    http_->Post(path, [this, path](const httplib::Request&, httplib::Response& res, const httplib::ContentReader& read) {
      const auto start = Clock::now();
      Batcher::Announcement announcement(batcher_);  // the batch being formed may wait for this one
      try {
        endpoints_.require_available(path);
        std::string body;
        size_t received = 0;
        bool too_large = false;
        const bool whole = read([&](const char* data, size_t n) {
          received += n;
          too_large = too_large || received > options_.max_body_bytes;
          if (!too_large) body.append(data, n);
          // A refused body is still read, and dropped, up to 4 times the limit: closing on unread
          // data resets the connection, and a client still sending would see the reset, not the 413.
          return received <= 4 * options_.max_body_bytes;
        });
        if (!whole && res.status == 413) too_large = true;  // httplib refused the Content-Length itself
        if (too_large || !whole) {
          res.set_header("Connection", "close");  // the rest of the body is still on the way
          throw HttpError(too_large ? 413 : 400, too_large ? fmt::format("body: more than the {} bytes the server takes (--max-body-bytes)",
                                                                         options_.max_body_bytes)
                                                           : "body: the request ended before its body did");
        }
        const json parsed = parse_request(body);
        const std::shared_ptr<ModelJob> job = endpoints_.prepare(path, parsed);
        if (!job->group.empty()) {
          if (!announcement.submit(job))
            throw HttpError(503, fmt::format("the server is overloaded ({} requests queued) or stopping; retry later",
                                             options_.batching.max_queue));
          job->done.get_future().wait();
          if (job->error) std::rethrow_exception(job->error);
        }
        res.status = 200;
        res.set_content(job->answer(), "application/json");
      } catch (const HttpError& e) {
        reply_error(res, e.status, e.what());
      } catch (const std::invalid_argument& e) {  // the model refused this request's input
        reply_error(res, 422, e.what());
      } catch (const std::exception& e) {
        reply_error(res, 500, e.what());
      }
      metrics_.request(path, res.status, std::chrono::duration<double>(Clock::now() - start).count());
    });
  }
  http_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(json_text({{"status", "ok"}}), "application/json");
    metrics_.request("/health", 200, 0);
  });
  http_->Get("/info", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(json_text(endpoints_.info(options_.model_name, options_.precision, options_.batching.max_batch_tokens)),
                    "application/json");
    metrics_.request("/info", 200, 0);
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.prometheus(), "text/plain; version=0.0.4");
  });
  http_->Get("/openapi.json", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(openapi(), "application/json");
  });
  http_->set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // a route's own answer
    reply_error(res, res.status, status_message(req, res.status));
    metrics_.request(known_path(req.path), res.status, 0);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      reply_error(res, 500, ex.what());
    } catch (...) {
      reply_error(res, 500, "unknown error");
    }
  });
}

}  // namespace xg::serve
