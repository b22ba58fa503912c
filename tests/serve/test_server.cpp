// bert_serve's HTTP contract: every endpoint's answer against serve/openapi.json, requests batched
// together answered exactly as alone, limits and error codes, slow clients, and shutdown answering
// what is in flight. All traffic stays on loopback.
#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "tests/serve/server_fixture.hpp"

using namespace xg;
using nlohmann::json;
using Catch::Matchers::Contains;

namespace {

const json& openapi() {
  static const json doc = json::parse(serve::Server::openapi());
  return doc;
}

const json& schema_named(const std::string& name) { return openapi().at("components").at("schemas").at(name); }

// What is wrong with `v` under `schema` (the OpenAPI subset serve/openapi.json uses: $ref, oneOf
// as anyOf, type, properties, required, additionalProperties false, items, minItems, enum,
// minimum, maximum), or "" when nothing is; `at` names the place.
std::string violation(const json& v, const json& schema, const std::string& at = "$") {
  if (schema.contains("$ref")) {
    const std::string ref = schema.at("$ref");
    return violation(v, schema_named(ref.substr(ref.rfind('/') + 1)), at);
  }
  if (schema.contains("oneOf")) {
    std::string why;
    for (const auto& alternative : schema.at("oneOf")) {
      const std::string w = violation(v, alternative, at);
      if (w.empty()) return "";
      why += (why.empty() ? "" : "; ") + w;
    }
    return at + " matches no alternative: " + why;
  }
  const std::string type = schema.value("type", "");
  if (type == "object") {
    if (!v.is_object()) return at + ": not an object";
    for (const auto& r : schema.value("required", json::array()))
      if (!v.contains(r.get<std::string>())) return at + ": no " + r.get<std::string>();
    const json properties = schema.value("properties", json::object());
    for (const auto& [key, value] : v.items()) {
      if (properties.contains(key)) {
        if (auto w = violation(value, properties.at(key), at + "." + key); !w.empty()) return w;
      } else if (schema.contains("additionalProperties") && !schema.at("additionalProperties").get<bool>()) {
        return at + ": unexpected field " + key;
      }
    }
  } else if (type == "array") {
    if (!v.is_array()) return at + ": not an array";
    if (v.size() < schema.value("minItems", size_t(0))) return at + ": too few items";
    for (size_t i = 0; i < v.size(); ++i)
      if (auto w = violation(v[i], schema.at("items"), at + "[" + std::to_string(i) + "]"); !w.empty()) return w;
  } else if (type == "string") {
    if (!v.is_string()) return at + ": not a string";
  } else if (type == "integer") {
    if (!v.is_number_integer()) return at + ": not an integer";
  } else if (type == "number") {
    if (!v.is_number()) return at + ": not a number";
  } else if (type == "boolean") {
    if (!v.is_boolean()) return at + ": not a boolean";
  }
  if (schema.contains("enum") && std::find(schema.at("enum").begin(), schema.at("enum").end(), v) == schema.at("enum").end())
    return at + ": " + v.dump() + " not among " + schema.at("enum").dump();
  if (schema.contains("minimum") && v.is_number() && v.get<double>() < schema.at("minimum").get<double>()) return at + ": below the minimum";
  if (schema.contains("maximum") && v.is_number() && v.get<double>() > schema.at("maximum").get<double>()) return at + ": above the maximum";
  return "";
}

// The schema of path's answer with `status`.
const json& response_schema(const std::string& path, const std::string& method, int status) {
  return openapi().at("paths").at(path).at(method).at("responses").at(std::to_string(status)).at("content").begin()->at("schema");
}

// A POST whose answer has `status` and matches the document; returns the answer (and its text
// in `text`).
json checked_post(const test::RunningServer& s, const std::string& path, const json& body, int status = 200,
                  std::string* text = nullptr) {
  const auto r = s.post(path, body.dump());
  REQUIRE(r);
  INFO(path << " " << body.dump() << " -> " << r->status << " " << r->body);
  REQUIRE(r->status == status);
  const json answer = json::parse(r->body);
  CHECK(violation(answer, response_schema(path, "post", status)) == "");
  if (text) *text = r->body;
  return answer;
}

// A raw connection to the server, for what an HTTP client library would not send.
struct RawConnection {
  explicit RawConnection(int port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawConnection() { ::close(fd); }
  void send(const std::string& s) const { REQUIRE(::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size())); }
  // Everything until the server closes the connection (or 10 s pass).
  std::string read_all() const {
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, size_t(n));
    return out;
  }
  int fd;
};

std::string post_head(const std::string& path, size_t length) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
         std::to_string(length) + "\r\n\r\n";
}

}  // namespace

TEST_CASE("bert_serve: every endpoint answers its documented example as serve/openapi.json says", "[serve]") {
  REQUIRE(openapi().at("openapi") == "3.0.3");
  // Each head's model and the endpoints it has beyond /embed and /tokenize.
  const std::map<std::string, std::string> heads{{"seq_single", "/classify"}, {"token", "/ner"}, {"qa", "/qa"}, {"mlm", "/fill-mask"}};
  for (const auto& [model, own] : heads) {
    INFO("model " << model);
    test::RunningServer s(model);
    for (const std::string path : {"/embed", "/tokenize", own.c_str()}) {
      const std::string request = openapi().at("paths").at(path).at("post").at("requestBody").at("content").at("application/json")
                                      .at("schema").at("$ref");
      json example = schema_named(request.substr(request.rfind('/') + 1)).at("example");
      if (path == "/qa") example = {{"question", "cat"}, {"context", "the cat sat on the mat"}};  // 12 positions: a short one
      checked_post(s, path, example);
    }
    // the endpoints of other heads: 404 naming what this model has
    for (const auto& [other, path] : heads)
      if (path != own) CHECK_THAT(checked_post(s, path, {{"inputs", "x"}}, 404).at("error").get<std::string>(), Contains("its endpoints: /embed"));
    for (const std::string path : {"/health", "/info"}) {
      const auto r = s.get(path);
      REQUIRE(r);
      CHECK(r->status == 200);
      CHECK(violation(json::parse(r->body), response_schema(path, "get", 200)) == "");
    }
    const json info = json::parse(s.get("/info")->body);
    CHECK(info.at("endpoints") == json({"/embed", own, "/tokenize"}));
    CHECK(info.at("max_input_length") == s.pipeline->max_tokens());
    CHECK(json::parse(s.get("/openapi.json")->body) == openapi());
    const auto metrics = s.get("/metrics");
    CHECK(metrics->get_header_value("Content-Type").rfind("text/plain", 0) == 0);
    CHECK_THAT(metrics->body, Contains("xgrad_requests_total{endpoint=\"" + own + "\",code=\"200\"} 1") &&
                                  Contains("xgrad_batch_size_count") && Contains("xgrad_queue_depth 0") &&
                                  Contains("xgrad_request_duration_seconds_bucket{endpoint=\"/embed\",le=\"+Inf\"} 1"));
  }
  // every documented path is served: none answers "no endpoint"
  test::RunningServer s("mlm");
  for (const auto& [path, methods] : openapi().at("paths").items()) {
    INFO(path);
    const auto r = methods.contains("get") ? s.get(path) : s.post(path, "{}");
    REQUIRE(r);
    CHECK_THAT(r->body, !Contains("no endpoint"));
  }
  CHECK_THAT(s.get("/nowhere")->body, Contains("no endpoint GET /nowhere"));
}

TEST_CASE("bert_serve: answers are the model's, whether a request runs alone or batched with others", "[serve]") {
  serve::ServerOptions o;
  o.batching.max_wait_ms = 300;  // wait for every client below: they all run in few batches
  test::RunningServer s("seq_single", o);
  const std::vector<std::string> texts{"the cat sat on the mat", "a dog", "it's fun, the cat ran and sat on a mat", "the",
                                       "a dog ran on the mat", "fun fun fun", "the mat sat", "cat"};
  // what the pipeline itself computes, and what the server answers one request at a time
  std::vector<json> requests;
  for (size_t i = 0; i < texts.size(); ++i) {
    requests.push_back({{"inputs", texts[i]}, {"top_k", 1 + i % 3}, {"truncate", true}});
    requests.push_back({{"inputs", {texts[i], texts[(i + 3) % texts.size()]}}, {"normalize", i % 2 == 0}, {"truncate", true}});
  }
  const auto path_of = [](size_t r) { return r % 2 == 0 ? "/classify" : "/embed"; };
  std::vector<std::string> alone;
  for (size_t r = 0; r < requests.size(); ++r) checked_post(s, path_of(r), requests[r], 200, &alone.emplace_back());
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto labels = s.pipeline->classify(texts[i], 1 + i % 3);  // truncates as the request asks
    const json first = json::parse(alone[2 * i]).front();
    CHECK(first.at("label") == labels.front().label);
    CHECK(first.at("score").get<double>() == labels.front().score);
  }
  const std::string batches_before = s.server->metrics().prometheus();
  // all at once, from many connections, three times over: each gets its own answer, to the bit
  std::vector<std::string> together(3 * requests.size());
  std::vector<std::thread> clients;
  // Each client connects first (a kept-alive GET /health), then all send at once: arrivals then
  // overlap however slowly the threads start.
  std::mutex mutex;
  std::condition_variable go;
  size_t connected = 0;
  for (size_t c = 0; c < together.size(); ++c)
    clients.emplace_back([&, c] {
      httplib::Client client = s.client();
      client.set_keep_alive(true);
      const bool ready = bool(client.Get("/health"));
      {
        std::unique_lock<std::mutex> lock(mutex);
        ++connected;
        go.notify_all();
        go.wait(lock, [&] { return connected == together.size(); });
      }
      const auto r = client.Post(path_of(c % requests.size()), requests[c % requests.size()].dump(), "application/json");
      together[c] = !ready ? "failed to connect"
                    : r   ? (r->status == 200 ? r->body : std::to_string(r->status) + " " + r->body)
                          : "failed: " + httplib::to_string(r.error());
    });
  for (auto& t : clients) t.join();
  for (size_t c = 0; c < together.size(); ++c) {
    INFO("request " << c % requests.size() << ": " << requests[c % requests.size()].dump());
    CHECK(together[c] == alone[c % requests.size()]);
  }
  // and they did run together: fewer batches than requests
  const auto count_of = [](const std::string& metrics) {
    const size_t at = metrics.find("xgrad_batch_size_count ");
    return std::stoul(metrics.substr(at + 23));
  };
  const size_t batches = count_of(s.server->metrics().prometheus()) - count_of(batches_before);
  CHECK(batches < together.size() / 2);
}

TEST_CASE("bert_serve refuses what it cannot answer with the status and the field", "[serve][errors]") {
  serve::ServerOptions o;
  o.limits.max_inputs = 4;
  o.limits.max_text_bytes = 200;
  o.max_body_bytes = 4096;
  test::RunningServer s("seq_single", o);
  const auto error_of = [&](const std::string& path, const std::string& body, int status) {
    const auto r = s.post(path, body);
    REQUIRE(r);
    INFO(body << " -> " << r->status << " " << r->body);
    CHECK(r->status == status);
    const json answer = json::parse(r->body);
    CHECK(violation(answer, schema_named("Error")) == "");
    return answer.at("error").get<std::string>();
  };
  CHECK_THAT(error_of("/embed", "{\"inputs\": [\"a\", ", 400), Contains("inputs[1]: not valid JSON"));
  CHECK_THAT(error_of("/embed", "{\"inputs\": \"caf\xc3\"}", 400), Contains("inputs: not valid JSON") && Contains("UTF-8"));
  CHECK_THAT(error_of("/embed", "{\"inputs\": [\"a\", \"\xff\"]}", 400), Contains("inputs[1]: not valid JSON"));
  CHECK_THAT(error_of("/embed", "[1, 2]", 400), Contains("body: expected a JSON object, got an array"));
  CHECK_THAT(error_of("/embed", std::string(100, '[') + std::string(100, ']'), 400), Contains("nested deeper than 64"));
  CHECK_THAT(error_of("/embed", "{\"inputs\": 3}", 400), Contains("inputs: expected a string or an array of strings, got a number (3)"));
  CHECK_THAT(error_of("/embed", "{\"inputs\": [\"a\", null]}", 400), Contains("inputs[1]: expected a string, got null"));
  CHECK_THAT(error_of("/embed", "{\"inputs\": []}", 400), Contains("inputs: an empty array"));
  CHECK_THAT(error_of("/embed", "{}", 400), Contains("inputs: missing"));
  CHECK_THAT(error_of("/embed", "{\"inputs\": \"a\", \"normalise\": true}", 400), Contains("\"normalise\": not a field of this request"));
  CHECK_THAT(error_of("/embed", "{\"inputs\": \"a\", \"normalize\": 1}", 400), Contains("normalize: expected true or false, got a number (1)"));
  CHECK_THAT(error_of("/embed", "{\"inputs\": \"a\", \"pooling\": \"max\"}", 400), Contains("pooling: expected \"mean\" or \"cls\""));
  CHECK_THAT(error_of("/classify", "{\"inputs\": \"a\", \"top_k\": 4}", 400), Contains("top_k: expected an integer from 1 to 3, got 4"));
  CHECK_THAT(error_of("/classify", "{\"inputs\": \"a\", \"top_k\": -1}", 400), Contains("top_k: expected an integer from 1 to 3"));
  CHECK_THAT(error_of("/classify", "{\"inputs\": \"a\", \"top_k\": 1e300}", 400), Contains("top_k: expected an integer"));
  CHECK_THAT(error_of("/classify", "{\"inputs\": [{\"text_pair\": \"a\"}]}", 400), Contains("inputs[0].text: missing"));
  CHECK_THAT(error_of("/classify", "{\"inputs\": {\"text\": 3}}", 400), Contains("inputs.text: expected a string, got a number (3)"));
  CHECK_THAT(error_of("/classify", "{\"inputs\": [\"a\", {\"text\": \"a\", \"pair\": \"b\"}]}", 400),
             Contains("inputs[1].\"pair\": not a field of this object (its fields: text, text_pair)"));
  CHECK_THAT(error_of("/classify", json({{"inputs", {{"text", "a"}, {"text_pair", std::string(201, 'a')}}}}).dump(), 413),
             Contains("inputs.text_pair: 201 bytes"));
  CHECK_THAT(error_of("/embed", "{\"" + std::string(1000, 'k') + "\": 1}", 400), Contains("\"...: not a field"));
  // an endpoint the model lacks is said before the body is read
  CHECK_THAT(error_of("/ner", "{not json", 404), Contains("/ner: this model (BertForSequenceClassification) has no head for it"));
  // limits: the body, the number of texts, a text's bytes (413); more tokens than the model takes (422)
  CHECK_THAT(error_of("/embed", "{\"inputs\": \"" + std::string(5000, 'a') + "\"}", 413), Contains("body: more than the 4096 bytes the server takes"));
  CHECK_THAT(error_of("/embed", "{\"inputs\": [\"a\", \"a\", \"a\", \"a\", \"a\"]}", 413), Contains("inputs: 5 texts, more than the 4"));
  CHECK_THAT(error_of("/embed", "{\"inputs\": [\"a\", \"" + std::string(201, 'a') + "\"]}", 413), Contains("inputs[1]: 201 bytes, more than the 200"));
  const std::string long_text = "the cat sat on the mat and the dog ran on the mat";
  CHECK_THAT(error_of("/embed", json({{"inputs", {"a", long_text}}}).dump(), 422),
             Contains("inputs[1]: 15 tokens, more than the 12 the model takes; send \"truncate\": true"));
  CHECK_THAT(error_of("/classify", json({{"inputs", long_text}}).dump(), 422), Contains("inputs: 15 tokens"));
  checked_post(s, "/embed", {{"inputs", long_text}, {"truncate", true}});
  checked_post(s, "/classify", {{"inputs", long_text}, {"truncate", true}});
  // a chunked body and a compressed one are counted as they arrive (httplib checks a Content-Length only)
  const std::string big = json({{"inputs", std::string(3000, ' ') + "the cat" + std::string(3000, ' ')}}).dump();
  auto chunked = s.client().Post("/tokenize", [&](size_t offset, httplib::DataSink& sink) {
    if (offset < big.size()) sink.write(big.data() + offset, std::min<size_t>(1000, big.size() - offset));
    else sink.done();
    return true;
  }, "application/json");
  REQUIRE(chunked);
  CHECK(chunked->status == 413);
  CHECK_THAT(chunked->body, Contains("more than the 4096 bytes"));
  httplib::Client compressing = s.client();
  compressing.set_compress(true);  // gzip: 6 KB of JSON in a few hundred bytes
  const auto inflated = compressing.Post("/tokenize", big, "application/json");
  REQUIRE(inflated);
  CHECK(inflated->status == 413);
  // a body within the limit under curl's default content type is read as JSON all the same
  const auto form = s.client().Post("/tokenize", json({{"inputs", std::string(150, 'a')}}).dump(), "application/x-www-form-urlencoded");
  REQUIRE(form);
  CHECK(form->status == 200);
  // the server goes on answering, and counted every refusal
  checked_post(s, "/embed", {{"inputs", "the cat"}});
  CHECK_THAT(s.server->metrics().prometheus(), Contains("xgrad_requests_total{endpoint=\"/embed\",code=\"413\"} 3"));
}

TEST_CASE("bert_serve: a slow client is dropped without holding the model; shutdown answers what is in flight", "[serve]") {
  serve::ServerOptions o;
  o.read_timeout_s = 1;
  test::RunningServer s("seq_single", o);
  const std::string body = json({{"inputs", "the cat sat"}}).dump();
  SECTION("a client that stops sending is dropped after the read timeout; others are answered meanwhile") {
    RawConnection slow(s.port);
    slow.send(post_head("/classify", body.size()) + body.substr(0, 5));
    const auto start = std::chrono::steady_clock::now();
    checked_post(s, "/classify", json::parse(body));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(900));
    const std::string answer = slow.read_all();  // closed by the server
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    CHECK_THAT(answer, !Contains("200 OK"));
  }
  SECTION("shutdown stops accepting, answers the request being read, then listen() returns") {
    RawConnection in_flight(s.port);
    in_flight.send(post_head("/classify", body.size()) + body.substr(0, 5));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::thread stopping([&] { s.server->shutdown(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(!s.get("/health"));  // no longer accepting
    in_flight.send(body.substr(5));
    const std::string answer = in_flight.read_all();
    CHECK_THAT(answer, Contains("HTTP/1.1 200 OK") && Contains("\"label\""));
    stopping.join();
    s.thread.join();  // listen() returned
  }
}

TEST_CASE("bert_serve: a full queue answers 503 with Retry-After; the queued requests are answered", "[serve][errors]") {
  serve::ServerOptions o;
  o.batching.max_queue = 1;
  o.batching.max_wait_ms = 500;  // the first request's batch waits for the others, which find the queue full
  test::RunningServer s("seq_single", o);
  std::vector<std::unique_ptr<httplib::Response>> results(8);
  std::vector<std::thread> clients;
  for (size_t c = 0; c < results.size(); ++c)
    clients.emplace_back([&, c] {
      auto r = s.post("/classify", json({{"inputs", "the cat " + std::to_string(c)}}).dump());
      if (r) results[c] = std::make_unique<httplib::Response>(*r);
    });
  for (auto& t : clients) t.join();
  size_t answered = 0, refused = 0;
  for (const auto& r : results) {
    REQUIRE(r);
    if (r->status == 200) {
      ++answered;
    } else {
      INFO(r->status << " " << r->body);
      REQUIRE(r->status == 503);
      CHECK(r->get_header_value("Retry-After") == "1");
      CHECK(json::parse(r->body).at("error_type") == "overloaded");
      CHECK_THAT(r->body, Contains("overloaded (1 requests queued)"));
      ++refused;
    }
  }
  CHECK(answered >= 1);
  CHECK(refused >= 1);
}

TEST_CASE("bert_serve: questions and long texts are checked before they reach the model", "[serve][errors]") {
  serve::ServerOptions o;
  o.limits.max_request_tokens = 40;
  test::RunningServer qa("qa", o);
  // 12 positions: windows of 12, 4 shared; [CLS] q [SEP] c [SEP] leaves 12 - 3 - q for the context
  CHECK_THAT(checked_post(qa, "/qa", {{"question", "where did the cat sit"}, {"context", "the cat sat on the mat"}}, 422)
                 .at("error").get<std::string>(),
             Contains("question: 5 tokens leave 4 of the model's 12-token windows for the context, no more than the 4"));
  CHECK_THAT(checked_post(qa, "/qa", {{"question", "cat"}, {"context", " \t "}}, 422).at("error").get<std::string>(),
             Contains("context: no words"));
  CHECK_THAT(checked_post(qa, "/qa", {{"question", ""}, {"context", "the cat"}}, 422).at("error").get<std::string>(),
             Contains("question: no words"));
  std::string long_context;
  for (int i = 0; i < 20; ++i) long_context += "the cat sat ";
  CHECK_THAT(checked_post(qa, "/qa", {{"question", "cat"}, {"context", long_context}}, 413).at("error").get<std::string>(),
             Contains("inputs: 64 tokens, more than the 40 one request may hold"));
  const json answer = checked_post(qa, "/qa", {{"question", "cat"}, {"context", "the cat sat on the mat"}});
  CHECK(answer.at("answer").get<std::string>() == std::string("the cat sat on the mat").substr(answer.at("start"), size_t(answer.at("end")) - size_t(answer.at("start"))));
  test::RunningServer ner("token", o);
  CHECK_THAT(checked_post(ner, "/ner", {{"inputs", long_context}}, 413).at("error").get<std::string>(), Contains("62 tokens"));
  checked_post(ner, "/ner", {{"inputs", "the cat sat on the mat and the dog ran on the mat"}});  // windows: longer than 12
}
