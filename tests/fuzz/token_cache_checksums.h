// Recomputes the two CRC-32s of a token cache file (train/data/token_cache.h) over its bytes, as anyone writing a
// cache by hand can: a forged header then passes the checksums and meets the checks behind them.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace hr::fuzz {

// The data CRC (offset 48, over the token data from data_offset) and the header CRC (offset 56, over the bytes before
// data_offset with its own field zeroed); nothing when the file is too short or data_offset lies outside it.
inline void forge_token_cache_checksums(std::string& bytes) {
  if (bytes.size() < 64) return;
  uint64_t data_offset;
  std::memcpy(&data_offset, bytes.data() + 40, 8);
  if (data_offset < 64 || data_offset > bytes.size()) return;
  const auto crc = [&](size_t from, size_t n) {
    return static_cast<uint32_t>(
        crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data() + from), static_cast<uInt>(n)));
  };
  const uint32_t data_crc = crc(data_offset, bytes.size() - data_offset);
  std::memcpy(bytes.data() + 48, &data_crc, 4);
  std::memset(bytes.data() + 56, 0, 4);
  const uint32_t header_crc = crc(0, data_offset);
  std::memcpy(bytes.data() + 56, &header_crc, 4);
}

}  // namespace hr::fuzz
