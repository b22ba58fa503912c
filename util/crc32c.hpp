#pragma once
// CRC32C (Castagnoli), the checksum of TFRecord framing (TensorBoard event files), and zip's CRC-32, computed by
// Intel's ISA-L (Debian libisal-dev), which uses the SSE4.2 crc32 instruction where it can.
#include <cstddef>
#include <cstdint>

namespace xg {

// Standard CRC32C of `size` bytes: crc32c("123456789") == 0xE3069283.
uint32_t crc32c(const void* data, size_t size);
// The CRC32C of the bytes behind `crc` followed by these: crc32c of a file read in pieces.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);

// TFRecord's masked CRC: the CRC rotated right by 15 bits plus 0xa282ead8, so that a CRC over
// bytes that themselves contain CRCs does not degenerate.
uint32_t masked_crc32c(const void* data, size_t size);

// CRC-32 (IEEE 802.3, reflected: zip, gzip, PNG): crc32_ieee("123456789") == 0xCBF43926.
uint32_t crc32_ieee(const void* data, size_t size);

}  // namespace xg
