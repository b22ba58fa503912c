#include "util/tensorboard.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "util/crc32c.hpp"

namespace xg {

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "TFRecord and protobuf fixed fields are little-endian");

// The few protobuf fields of tensorflow/core/util/event.proto and summary.proto that a scalar
// needs, encoded by hand: pulling in a .proto toolchain for three fields is not worth it.
//   Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
//           SessionLog session_log = 7; }
//   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

void put_key(std::string& out, int field, WireType type) { put_varint(out, uint64_t(field) << 3 | type); }

template <class T>
void put_fixed(std::string& out, int field, T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  put_key(out, field, sizeof(T) == 4 ? kFixed32 : kFixed64);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string event_header(double wall_time) {
  std::string e;
  put_fixed(e, 1, wall_time);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

std::string scalar_event(double wall_time, int64_t step, const std::string& tag, float value) {
  std::string v;
  put_bytes(v, 1, tag);
  put_fixed(v, 2, value);
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e;
  put_fixed(e, 1, wall_time);
  put_key(e, 2, kVarint);
  put_varint(e, uint64_t(step));  // protobuf int64: negative steps are 10-byte two's complement
  put_bytes(e, 5, summary);
  return e;
}

// Event { ...; SessionLog session_log = 7; }  SessionLog { SessionStatus status = 1; }, START = 1.
std::string session_start_event(double wall_time, int64_t step) {
  std::string log;
  put_key(log, 1, kVarint);
  put_varint(log, 1);
  std::string e;
  put_fixed(e, 1, wall_time);
  put_key(e, 2, kVarint);
  put_varint(e, uint64_t(step));
  put_bytes(e, 7, log);
  return e;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// How often add_scalar pushes events to disk, so a running TensorBoard sees progress.
constexpr std::chrono::seconds kFlushEvery{10};

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& log_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  if (ec) throw std::runtime_error(fmt::format("[tensorboard] {}: cannot create the directory: {}", log_dir, ec.message()));
  const double now = unix_seconds_now();
  const std::string base = (fs::path(log_dir) / fmt::format("events.out.tfevents.{}.{}", int64_t(now), host_name())).string();
  // Two writers started in the same second in one directory must not clobber each other.
  path_ = base;
  for (int n = 2; fs::exists(path_); ++n) path_ = fmt::format("{}.{}", base, n);
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) throw std::runtime_error(fmt::format("[tensorboard] {}: cannot create {}: {}", log_dir, path_, std::strerror(errno)));
  write_record(event_header(now));
  flush();
  if (failed_) throw std::runtime_error(fmt::format("[tensorboard] {}: cannot write {}", log_dir, path_));
}

TensorBoardWriter::~TensorBoardWriter() {
  flush();
  std::fclose(file_);
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  write_record(scalar_event(unix_seconds_now(), step, tag, float(value)));
  if (std::chrono::steady_clock::now() - last_flush_ >= kFlushEvery) flush();
}

void TensorBoardWriter::add_session_start(int64_t step) {
  write_record(session_start_event(unix_seconds_now(), step));
  flush();
}

void TensorBoardWriter::flush() {
  if (failed_) return;
  if (std::fflush(file_) != 0) report_failure("flush");
  last_flush_ = std::chrono::steady_clock::now();
}

// TFRecord framing: uint64 length, masked CRC of those 8 bytes, the bytes, masked CRC of them.
void TensorBoardWriter::write_record(const std::string& event) {
  if (failed_) return;
  const uint64_t length = event.size();
  char header[12];
  std::memcpy(header, &length, 8);
  const uint32_t length_crc = masked_crc32c(header, 8);
  std::memcpy(header + 8, &length_crc, 4);
  const uint32_t data_crc = masked_crc32c(event.data(), event.size());
  const bool ok = std::fwrite(header, 1, sizeof(header), file_) == sizeof(header) &&
                  std::fwrite(event.data(), 1, event.size(), file_) == event.size() &&
                  std::fwrite(&data_crc, 1, 4, file_) == 4;
  if (!ok) report_failure("write");
}

void TensorBoardWriter::report_failure(const char* what) {
  // A partly written record makes the rest of the file unreadable, so stop writing altogether.
  failed_ = true;
  fmt::print(stderr, "[tensorboard] {}: {} failed ({}); no more events are written to it\n", path_, what,
             std::strerror(errno));
}

}  // namespace xg
