#pragma once
// The protobuf wire format, for the few fields of SentencePiece's ModelProto read and written
// here: Debian's libsentencepiece-dev installs no schema classes for it (sentencepiece_model.pb.h),
// and the library itself takes a serialized ModelProto (LoadFromSerializedProto).
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace xg::text {

// The fields of one message, in order. Errors are std::runtime_error
// "[SentencePieceTokenizer] WHERE: ...".
class WireFields {
 public:
  WireFields(std::string_view bytes, const std::string& where) : s_(bytes), where_(where) {}
  // The next length-delimited field numbered `number`, skipping others; false at the end.
  bool next_bytes(uint32_t number, std::string_view& out) {
    while (pos_ < s_.size()) {
      const uint64_t key = varint();
      const uint32_t field = uint32_t(key >> 3), wire = uint32_t(key & 7);
      if (wire == 0) varint();
      else if (wire == 1) skip(8);
      else if (wire == 5) skip(4);
      else if (wire == 2) {
        const uint64_t n = varint();
        if (n > s_.size() - pos_) fail("the model's protobuf data is truncated");
        const std::string_view value = s_.substr(pos_, size_t(n));
        pos_ += size_t(n);
        if (field == number) {
          out = value;
          return true;
        }
      } else {
        fail(fmt::format("the model's protobuf data has an unknown wire type {}", wire));
      }
    }
    return false;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(fmt::format("[SentencePieceTokenizer] {}: {}", where_, what));
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= s_.size()) fail("the model's protobuf data is truncated");
      const uint8_t b = uint8_t(s_[pos_++]);
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("the model's protobuf data has a varint over 10 bytes");
  }
  void skip(size_t n) {
    if (n > s_.size() - pos_) fail("the model's protobuf data is truncated");
    pos_ += n;
  }
  std::string_view s_;
  const std::string& where_;
  size_t pos_ = 0;
};

// A message written field by field.
class WireWriter {
 public:
  // An integer field (wire type 0); a negative int32 is its 64-bit two's complement, as protobuf writes it.
  void varint_field(uint32_t number, int64_t value) {
    varint(uint64_t(number) << 3);
    varint(uint64_t(value));
  }
  void float_field(uint32_t number, float value) {
    varint((uint64_t(number) << 3) | 5);
    char b[4];
    std::memcpy(b, &value, 4);  // little-endian, as the wire format (x86)
    out_.append(b, 4);
  }
  void bytes_field(uint32_t number, std::string_view value) {
    varint((uint64_t(number) << 3) | 2);
    varint(value.size());
    out_.append(value);
  }
  const std::string& bytes() const { return out_; }

 private:
  void varint(uint64_t v) {
    do {
      out_.push_back(char((v & 0x7F) | (v > 0x7F ? 0x80 : 0)));
      v >>= 7;
    } while (v);
  }
  std::string out_;
};

}  // namespace xg::text
