#pragma once
// A bert_serve server in the test process: a tiny checkpoint of tests/data/heads behind
// serve::Server on a free loopback port, served on a thread until the fixture ends.
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "inference/pipeline.hpp"
#include "serve/server.hpp"
#include "tests/temp_path.hpp"

namespace xg::test {

inline const std::string kHeads = std::string(XGRAD_TEST_DATA_DIR) + "/heads/";

// tests/data/heads/<name>, the token classifier with IOB2 labels (its checkpoint has LABEL_i).
inline std::string head_checkpoint(const std::string& name) {
  if (name != "token") return kHeads + name;
  const std::filesystem::path dir = temp_path("xgrad_serve_token");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kHeads + "token/model.safetensors", dir / "model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  auto config = nlohmann::json::parse(std::ifstream(kHeads + "token/config.json"));
  config["id2label"] = {{"0", "O"}, {"1", "B-PER"}, {"2", "I-PER"}, {"3", "B-LOC"}, {"4", "I-LOC"}};
  config.erase("label2id");
  std::ofstream(dir / "config.json") << config.dump();
  return dir.string();
}

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
