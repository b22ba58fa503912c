// A model server: any checkpoint of any family behind HTTP, its requests batched dynamically.
//   bert_serve --model DIR [--host 127.0.0.1] [--port 8080] [--precision fp32|bf16|int8] [--threads N]
//              [--max-batch-tokens 16384] [--max-wait-ms 5] [--max-queue 512] ...
// Endpoints (docs/serving.md, serve/openapi.json): POST /embed /classify /ner /qa /fill-mask
// /tokenize, GET /health /info /metrics /openapi.json. SIGTERM or SIGINT: stop accepting, answer
// the requests in flight, exit 0.
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "autograd/parallel.hpp"
#include "autograd/precision.hpp"
#include "inference/pipeline.hpp"
#include "models/core/checkpoint.hpp"
#include "nn/execution.hpp"
#include "serve/server.hpp"
#include "util/cli.hpp"

using namespace xg;

namespace {

struct ServeArgs {
  std::string model, tokenizer;
  bool cased = false;
  std::string precision = "fp32";
  int threads = 0;
  double drain_s = 10;
  serve::ServerOptions server;
};

void add_flags(CLI::App& app, ServeArgs& a) {
  xg::cli::show_defaults(app);
  app.add_option("--model", a.model, "checkpoint directory (config.json, weights, tokenizer files) or a run's output directory")
      ->type_name("DIR")->required()->group("Model");
  app.add_option("--tokenizer,--vocab", a.tokenizer, "a tokenizer file or directory instead of the model's")->type_name("FILE|DIR")->group("Model");
  app.add_flag("--cased", a.cased, "with --tokenizer vocab.txt: keep case and accents")->group("Model");
  app.add_option("--precision", a.precision, "matmul precision of the linear layers: fp32, bf16 (AVX512-BF16) or int8 "
                                             "(dynamic quantization, AVX512-VNNI)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}))->group("Model");
  xg::cli::add_number(app, "--threads", a.threads, "threads the model runs on (0: XGRAD_NUM_THREADS, else the cores)")
      ->check(CLI::Range(0, 4096))->group("Model");

  auto& s = a.server;
  app.add_option("--host", s.host, "address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface)")->group("Network");
  xg::cli::add_number(app, "--port", s.port, "port to listen on (0: any free port, printed at start)")->check(CLI::Range(0, 65535))->group("Network");
  xg::cli::add_number(app, "--connection-threads", s.connection_threads, "connections served at once (one thread each)")
      ->check(CLI::Range(size_t(1), size_t(4096)))->group("Network");
  xg::cli::add_number(app, "--timeout-s", s.read_timeout_s, "a client reading or writing slower than this is dropped")
      ->check(CLI::Range(1, 3600))->group("Network");
  xg::cli::add_number(app, "--keep-alive-s", s.keep_alive_s, "an idle kept-alive connection is closed after this")
      ->check(CLI::Range(1, 3600))->group("Network");
  xg::cli::add_number(app, "--drain-s", a.drain_s, "after SIGTERM, how long connections still sending may hold the exit")
      ->check(CLI::Range(0.0, 3600.0))->group("Network");

  xg::cli::add_number(app, "--max-batch-tokens", s.batching.max_batch_tokens, "tokens one batch may hold (a larger request runs alone)")
      ->check(xg::cli::positive())->group("Batching");
  xg::cli::add_number(app, "--max-wait-ms", s.batching.max_wait_ms, "how long a batch with room waits for requests being read "
                                                                     "(a lone request never waits)")
      ->check(CLI::Range(0.0, 10000.0))->group("Batching");
  xg::cli::add_number(app, "--max-queue", s.batching.max_queue, "requests waiting for the model; more are answered 503")
      ->check(xg::cli::positive())->group("Batching");

  xg::cli::add_number(app, "--max-client-batch-size", s.limits.max_inputs, "texts one request may hold (more: 413)")
      ->check(xg::cli::positive())->group("Limits");
  xg::cli::add_number(app, "--max-text-bytes", s.limits.max_text_bytes, "bytes one text may have (more: 413)")
      ->check(xg::cli::positive())->group("Limits");
  xg::cli::add_number(app, "--max-request-tokens", s.limits.max_request_tokens, "tokens of all of one request's texts (more: 413)")
      ->check(xg::cli::positive())->group("Limits");
  xg::cli::add_number(app, "--max-body-bytes", s.max_body_bytes, "bytes one request body may have (more: 413)")
      ->check(xg::cli::positive())->group("Limits");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Serves a checkpoint over HTTP: embeddings, classification, entities, answers, filled masks and tokens, "
               "requests batched together as they arrive",
               "bert_serve");
  ServeArgs a;
  add_flags(app, a);
  app.footer("Endpoints: POST /embed /classify /ner /qa /fill-mask /tokenize (those the model's head has), GET /health /info\n"
             "/metrics (Prometheus) /openapi.json. SIGTERM or SIGINT stops accepting, answers what is in flight and exits 0.");
  if (auto code = xg::cli::parse_or_exit(app, argc, argv)) return *code;

  // Signals go to one thread that waits for them; every thread started later inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is an error on its socket, not the end of the server
  try {
    nn::set_default_execution(nn::ExecutionOptions::from_environment());
    if (a.threads > 0) set_num_threads(a.threads);
    inference::PipelineOptions po;
    po.tokenizer = a.tokenizer;
    po.cased = a.cased;
    po.precision = matmul_precision_from_name(a.precision);
    inference::Pipeline pipeline = inference::Pipeline::load(a.model, po);
    for (const auto& note : pipeline.notes()) fmt::print(stderr, "bert_serve: {}\n", note);
    a.server.write_timeout_s = a.server.read_timeout_s;
    a.server.model_name = a.model;
    a.server.precision = a.precision;
    const std::string dir = models::model_directory_in(a.model, nullptr);
    serve::Server server(pipeline, dir, a.server);
    const int port = server.bind();
    fmt::print("bert_serve: {} ({}, {} threads, {}) listening on http://{}:{}\n", a.model, pipeline.model().architecture(),
               num_threads(), a.precision, a.server.host, port);
    std::fflush(stdout);
    std::mutex mutex;
    std::condition_variable stopped;
    bool listening = true;
    std::thread stopper([&] {
      int signal = 0;
      sigwait(&stop_signals, &signal);
      std::unique_lock<std::mutex> lock(mutex);
      if (!listening) return;  // listen() ended another way, and woke this thread
      fmt::print(stderr, "bert_serve: {}: no new connections; answering the requests in flight\n", signal == SIGTERM ? "SIGTERM" : "SIGINT");
      server.shutdown();
      // A client trickling its request holds its connection up to the read timeout per byte: bounded here.
      if (!stopped.wait_for(lock, std::chrono::duration<double>(a.drain_s), [&] { return !listening; })) {
        fmt::print(stderr, "bert_serve: connections still open after {} s (clients still sending); exiting\n", a.drain_s);
        std::_Exit(0);
      }
    });
    server.listen();
    {
      std::lock_guard<std::mutex> lock(mutex);
      listening = false;
    }
    stopped.notify_all();
    pthread_kill(stopper.native_handle(), SIGTERM);  // wakes it if it still waits for a signal
    stopper.join();
    fmt::print(stderr, "bert_serve: stopped\n");
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", xg::cli::error_line("bert_serve", e.what()));
    return 1;
  }
}
