#include "util/crc32c.hpp"

#include <isa-l/crc.h>

#include <climits>

namespace xg {

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size) {
  // ISA-L's crc32_iscsi neither pre- nor post-inverts: the standard CRC32C starts from ~0 and
  // inverts at the end. Its length is an int, so long buffers go in pieces.
  crc = ~crc;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  while (size > 0) {
    const int n = size > size_t(INT_MAX) ? INT_MAX : int(size);
    crc = crc32_iscsi(p, n, crc);
    p += n;
    size -= size_t(n);
  }
  return ~crc;
}

uint32_t crc32c(const void* data, size_t size) { return crc32c_extend(0, data, size); }

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

uint32_t crc32_ieee(const void* data, size_t size) {
  // crc32_gzip_refl inverts before and after, as zip's CRC-32 does; its length is 64-bit.
  return crc32_gzip_refl(0, static_cast<const unsigned char*>(data), size);
}

}  // namespace xg
