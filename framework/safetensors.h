// Reading and writing the safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header, then the raw little-endian tensor data. The header maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the start of the data), plus an optional
// "__metadata__" object of string values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hr {

// One tensor as stored: its dtype name as in the format ("F32", "F64", "I32", "I64", "BF16", "F16", "U8", "BOOL",
// ...), its shape and its raw little-endian bytes (numel * element size of them).
struct SafeTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

struct SafeTensorsFile {
  std::map<std::string, SafeTensor> tensors;
  std::map<std::string, std::string> metadata;  // the "__metadata__" entry, less the checksums
  // Set by read_safetensors: every tensor's data matched its checksum. False for a file written elsewhere (a Hugging
  // Face download has none): its data loaded unverified, which checksum_note() words for the caller to print once.
  bool checksummed = false;
};

// The "__metadata__" key under which write_safetensors stores a tensor's CRC-32 (8 lowercase hex digits).
std::string safetensors_checksum_key(const std::string& tensor_name);

// Reads and validates a whole file. Throws hr::Error naming the file and the problem: not a safetensors file, a
// header longer than 100 MB, truncated, not UTF-8 JSON or not a JSON object, a tensor entry with a missing or wrong
// dtype, shape or data_offsets, tensor data that overlaps, leaves gaps or is followed by unaccounted bytes; and, naming
// the tensor, data that does not match its checksum, a checksum missing in a file that has them, or a NaN or infinity
// in a floating-point tensor.
SafeTensorsFile read_safetensors(const std::string& path);

// "" for a file whose checksums were verified; else a one-line note that `path`'s tensor data was not verified.
std::string checksum_note(const std::string& path, const SafeTensorsFile& f);

// Writes `f` atomically (see atomic_file.h) in the layout the safetensors package itself writes: tensors ordered by
// descending dtype alignment then by name, their data contiguous from offset 0 (so each tensor starts at a multiple
// of its element size), the JSON header padded with spaces to a multiple of 8 bytes so the data section is 8-byte
// aligned, metadata under "__metadata__" with one CRC-32 per tensor added. Throws hr::Error naming the path and
// tensor on an unknown dtype, a negative dimension, a byte count that does not match the shape, or a metadata key that is a checksum key.
void write_safetensors(const std::string& path, const SafeTensorsFile& f);

// Bytes per element of a dtype name; throws hr::Error for a name the format does not define (or we do not support).
size_t safetensors_dtype_size(const std::string& dtype);

// A tensor's values as float, converted from F32, F64, I64, I32, BF16 or F16; throws hr::Error on other dtypes.
std::vector<float> to_f32(const SafeTensor& t);
// A tensor's values as int64, from I64, I32, I16, I8, U8 or BOOL; throws hr::Error on other dtypes.
std::vector<int64_t> to_i64(const SafeTensor& t);

// An F32 (I64) tensor of `shape` holding a copy of numel(shape) values from `data`.
SafeTensor from_f32(std::vector<int64_t> shape, const float* data);
SafeTensor from_i64(std::vector<int64_t> shape, const int64_t* data);

}  // namespace hr
