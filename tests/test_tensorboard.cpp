// TensorBoard event files: CRC32C against published test vectors, and a written file read back
// record by record (TFRecord framing, both CRCs, the Event protobuf fields).
#include <catch2/catch.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "util/crc32c.hpp"
#include "util/tensorboard.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(temp_path("xgrad_tb_" + name));
  fs::remove_all(dir);
  return dir;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::path only_event_file(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  REQUIRE(files[0].filename().string().rfind("events.out.tfevents.", 0) == 0);
  return files[0];
}

// A minimal protobuf reader: field number -> raw bytes of its last occurrence (varints decoded
// into a uint64 stored in 8 bytes), enough to check the few fields the writer emits.
struct Fields {
  std::map<int, std::string> bytes;
  std::map<int, uint64_t> ints;
};

uint64_t read_varint(const std::string& s, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    REQUIRE(i < s.size());
    const uint8_t b = uint8_t(s[i++]);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}

Fields parse_message(const std::string& s) {
  Fields f;
  for (size_t i = 0; i < s.size();) {
    const uint64_t key = read_varint(s, i);
    const int field = int(key >> 3);
    switch (key & 7) {
      case 0: f.ints[field] = read_varint(s, i); break;
      case 1: REQUIRE(i + 8 <= s.size()); f.bytes[field] = s.substr(i, 8); i += 8; break;
      case 5: REQUIRE(i + 4 <= s.size()); f.bytes[field] = s.substr(i, 4); i += 4; break;
      case 2: {
        const uint64_t n = read_varint(s, i);
        REQUIRE(i + n <= s.size());
        f.bytes[field] = s.substr(i, n);
        i += n;
        break;
      }
      default: FAIL("unexpected wire type " << (key & 7));
    }
  }
  return f;
}

template <class T>
T as(const std::string& raw) {
  REQUIRE(raw.size() == sizeof(T));
  T v;
  std::memcpy(&v, raw.data(), sizeof(T));
  return v;
}

// Splits a TFRecord file into its records, checking every length and CRC.
std::vector<std::string> read_records(const std::string& file) {
  std::vector<std::string> records;
  for (size_t i = 0; i < file.size();) {
    REQUIRE(i + 12 <= file.size());
    const uint64_t len = as<uint64_t>(file.substr(i, 8));
    CHECK(as<uint32_t>(file.substr(i + 8, 4)) == masked_crc32c(file.data() + i, 8));
    REQUIRE(i + 12 + len + 4 <= file.size());
    records.push_back(file.substr(i + 12, len));
    CHECK(as<uint32_t>(file.substr(i + 12 + len, 4)) == masked_crc32c(records.back().data(), len));
    i += 12 + len + 4;
  }
  return records;
}

}  // namespace

TEST_CASE("crc32c matches the RFC 3720 and check-string test vectors", "[tensorboard]") {
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, 0), down(32, 0);
  for (int i = 0; i < 32; ++i) {
    up[i] = char(i);
    down[i] = char(31 - i);
  }
  CHECK(crc32c(zeros.data(), 32) == 0x8a9136aau);
  CHECK(crc32c(ones.data(), 32) == 0x62a8ab43u);
  CHECK(crc32c(up.data(), 32) == 0x46dd794eu);
  CHECK(crc32c(down.data(), 32) == 0x113fdb5cu);
  CHECK(crc32c("123456789", 9) == 0xe3069283u);
  CHECK(crc32c("", 0) == 0u);
  // The value tensorboard's own masked_crc32c (Python) gives for the same bytes.
  CHECK(masked_crc32c("123456789", 9) == 0xc78ab0e5u);
}

TEST_CASE("TensorBoardWriter writes TFRecord-framed Event protos", "[tensorboard]") {
  const fs::path dir = fresh_dir("events") / "nested" / "run";
  const double before = double(std::time(nullptr));
  {
    TensorBoardWriter tb(dir.string());
    tb.add_scalar("train/loss", 2.5, 10);
    tb.add_scalar("train/lr", 1e-4, 11);
    tb.add_scalar("eval/acc", -0.75, -3);
    tb.flush();
  }
  const fs::path file = only_event_file(dir);
  const std::string host = file.filename().string().substr(std::strlen("events.out.tfevents."));
  const double stamp = std::stod(host.substr(0, host.find('.')));
  CHECK(stamp >= before - 1);
  CHECK(stamp <= before + 60);

  const auto records = read_records(read_file(file));
  REQUIRE(records.size() == 4);
  const Fields header = parse_message(records[0]);
  CHECK(header.bytes.at(3) == "brain.Event:2");
  CHECK(as<double>(header.bytes.at(1)) >= before - 1);

  struct Want { const char* tag; float value; int64_t step; };
  const Want want[] = {{"train/loss", 2.5f, 10}, {"train/lr", 1e-4f, 11}, {"eval/acc", -0.75f, -3}};
  for (int i = 0; i < 3; ++i) {
    INFO("record " << i + 1);
    const Fields event = parse_message(records[size_t(i) + 1]);
    CHECK(int64_t(event.ints.at(2)) == want[i].step);
    CHECK(as<double>(event.bytes.at(1)) >= stamp);
    const Fields summary = parse_message(event.bytes.at(5));
    const Fields value = parse_message(summary.bytes.at(1));
    CHECK(value.bytes.at(1) == want[i].tag);
    CHECK(as<float>(value.bytes.at(2)) == want[i].value);
  }
  fs::remove_all(dir.parent_path().parent_path());
}

TEST_CASE("TensorBoardWriter marks a restart with a SessionLog START event", "[tensorboard]") {
  // TensorBoard's loader purges the steps at or past a START's step: a resumed run's replay.
  const fs::path dir = fresh_dir("restart");
  {
    TensorBoardWriter tb(dir.string());
    tb.add_session_start(11);
  }
  const auto records = read_records(read_file(only_event_file(dir)));
  REQUIRE(records.size() == 2);
  const Fields event = parse_message(records[1]);
  CHECK(event.ints.at(2) == 11);
  CHECK(event.bytes.count(5) == 0);
  const Fields session = parse_message(event.bytes.at(7));
  CHECK(session.ints.at(1) == 1);  // SessionLog.START
  fs::remove_all(dir);
}

TEST_CASE("TensorBoardWriter refuses a directory it cannot create", "[tensorboard]") {
  const fs::path dir = fresh_dir("blocked");
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "not a directory";
  const std::string bad = (dir / "file" / "run").string();
  CHECK_THROWS_WITH(TensorBoardWriter(bad), Contains("[tensorboard] " + bad + ":"));
  fs::remove_all(dir);
}

TEST_CASE("TensorBoardWriter reports a write error once and keeps going", "[tensorboard]") {
  const fs::path dir = fresh_dir("full");
  const fs::path log = dir / "stderr.txt";
  {
    TensorBoardWriter tb(dir.string());
    // A file size limit makes writes past it fail with EFBIG (SIGXFSZ ignored), like a full disk.
    rlimit old{};
    getrlimit(RLIMIT_FSIZE, &old);
    rlimit small = old;
    small.rlim_cur = 4096;
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    std::fflush(stderr);
    const int saved_stderr = dup(2);
    std::FILE* capture = std::fopen(log.c_str(), "w");
    REQUIRE(capture);
    dup2(fileno(capture), 2);
    setrlimit(RLIMIT_FSIZE, &small);
    CHECK_NOTHROW([&] {
      for (int i = 0; i < 2000; ++i) {
        tb.add_scalar("loss", 1.0 / (i + 1), i);
        if (i % 100 == 0) tb.flush();
      }
      tb.flush();
    }());
    setrlimit(RLIMIT_FSIZE, &old);
    std::fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    std::fclose(capture);
    std::signal(SIGXFSZ, old_handler);
  }
  const std::string err = read_file(log);
  CHECK_THAT(err, Contains("[tensorboard]") && Contains("failed"));
  CHECK(err.find("[tensorboard]") == err.rfind("[tensorboard]"));  // reported once
  fs::remove_all(dir);
}
