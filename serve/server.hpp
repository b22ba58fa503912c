#pragma once
// bert_serve's HTTP server (cpp-httplib): the model endpoints of serve/endpoints.hpp behind
// dynamic batching (serve/batcher.hpp), with GET /health, /info, /metrics and /openapi.json.
//
//   serve::Server server(pipeline, options);
//   const int port = server.bind();   // options.port 0: a free port
//   std::thread t([&] { server.listen(); });
//   ...
//   server.shutdown();                // stop accepting; requests in flight are answered
//   t.join();
//
// Connections are served by a pool of threads (one per open connection); the model runs on the
// batcher's one worker, so a slow or idle client holds a connection thread until its read or
// keep-alive timeout, never the model.
#include <atomic>
#include <memory>
#include <string>

#include "inference/pipeline.hpp"
#include "serve/batcher.hpp"
#include "serve/endpoints.hpp"
#include "serve/metrics.hpp"

namespace httplib {
class Server;
}

namespace xg::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";  // listen here only
  int port = 8080;                 // 0: any free port (bind() says which)
  std::string model_name;          // /info's model_id
  std::string precision = "fp32";  // as /info reports it
  BatcherOptions batching;
  RequestLimits limits;
  size_t max_body_bytes = 2 << 20;  // larger bodies: 413
  size_t connection_threads = 128;  // connections served at once; more wait to be accepted
  int read_timeout_s = 5;           // a client sending slower than this is dropped
  int write_timeout_s = 5;
  int keep_alive_s = 5;             // an idle kept-alive connection is closed after this
};

class Server {
 public:
  // `model_dir` holds the model's files (1_Pooling/config.json sets /embed's default pooling).
  Server(inference::Pipeline& pipeline, const std::string& model_dir, const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket; returns the port. Throws naming host and port when it cannot.
  int bind();
  // Serves until shutdown(), then answers what is in flight and returns.
  void listen();
  // Stops accepting connections; listen() returns once the requests in flight are answered.
  // Safe from any thread (a signal-waiting one), any number of times.
  void shutdown();

  const Metrics& metrics() const { return metrics_; }
  // GET /openapi.json's document (serve/openapi.json, compiled in).
  static const std::string& openapi();

 private:
  void add_routes();

  inference::Pipeline& pipeline_;
  ServerOptions options_;
  Metrics metrics_;
  Batcher batcher_;
  Endpoints endpoints_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<bool> bound_{false};
  int listen_fd_ = -1;
};

}  // namespace xg::serve
