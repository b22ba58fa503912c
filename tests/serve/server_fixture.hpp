#pragma once
// A bert_serve server in the test process: a tiny checkpoint of tests/data/heads behind
// serve::Server on a free loopback port, served on a thread until the fixture ends.
#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "inference/pipeline.hpp"
#include "serve/server.hpp"
#include "tests/head_checkpoints.hpp"

namespace xg::test {

struct RunningServer {
  explicit RunningServer(const std::string& model, serve::ServerOptions options = {}) {
    inference::PipelineOptions po;
    po.tokenizer = kHeads + "classify_vocab.txt";
    const std::string dir = head_checkpoint(model);
    pipeline = std::make_unique<inference::Pipeline>(inference::Pipeline::load(dir, po));
    options.port = 0;
    server = std::make_unique<serve::Server>(*pipeline, dir, options);
    port = server->bind();
    thread = std::thread([this] { server->listen(); });
  }
  ~RunningServer() { stop(); }
  void stop() {
    server->shutdown();
    if (thread.joinable()) thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(30, 0);
    return c;
  }
  httplib::Result post(const std::string& path, const std::string& body) const {
    return client().Post(path.c_str(), body, "application/json");
  }
  httplib::Result get(const std::string& path) const { return client().Get(path.c_str()); }

  std::unique_ptr<inference::Pipeline> pipeline;
  std::unique_ptr<serve::Server> server;
  int port = 0;
  std::thread thread;
};

}  // namespace xg::test
