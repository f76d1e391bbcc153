#include "framework/safetensors.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include "framework/atomic_file.h"
#include "framework/bounded_json.h"
#include "kernels/base/error.h"

namespace hr {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so is this reader");

// The dtypes of the format with their element sizes, in the order of the safetensors package's Dtype enum: its
// writer lays tensors out by descending rank, which puts every tensor at a multiple of its element size.
struct DtypeInfo {
  const char* name;
  size_t size;
  int rank;
};
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", 1, 0}, {"U8", 1, 1},   {"I8", 1, 2},    {"F8_E5M2", 1, 3}, {"F8_E4M3", 1, 4},
    {"I16", 2, 5},  {"U16", 2, 6},  {"F16", 2, 7},   {"BF16", 2, 8},    {"I32", 4, 9},
    {"U32", 4, 10}, {"F32", 4, 11}, {"F64", 8, 12},  {"I64", 8, 13},    {"U64", 8, 14},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const DtypeInfo& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

// Files (and shapes) past this many bytes are certainly corrupt; keeps numel * size free of overflow.
constexpr uint64_t kMaxBytes = uint64_t{1} << 60;

// Sets nbytes = numel(shape) * elem_size; false for a negative dimension or a size past kMaxBytes.
bool checked_nbytes(const std::vector<int64_t>& shape, size_t elem_size, uint64_t& nbytes) {
  uint64_t n = elem_size;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (d != 0 && n > kMaxBytes / static_cast<uint64_t>(d)) return false;
    n *= static_cast<uint64_t>(d);
  }
  nbytes = n;
  return true;
}

// The format's own cap (the safetensors package refuses longer headers): a corrupt length cannot make us allocate more.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

std::string crc32_hex(const std::vector<uint8_t>& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed tensors past 4 GiB in pieces
  for (size_t done = 0; done < bytes.size();) {
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes.size() - done, 1u << 30));
    crc = crc32(crc, bytes.data() + done, n);
    done += n;
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc & 0xffffffffUL));
  return hex;
}

constexpr const char* kChecksumPrefix = "crc32:";

bool is_checksum_key(const std::string& key) { return key.rfind(kChecksumPrefix, 0) == 0; }

// The index of the first NaN or infinity of a floating-point tensor, -1 when there is none (or it is not floating).
int64_t first_non_finite(const SafeTensor& t) {
  auto scan = [&](auto zero, auto is_bad) -> int64_t {
    using T = decltype(zero);
    const size_t n = t.bytes.size() / sizeof(T);
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
      if (is_bad(v)) return static_cast<int64_t>(i);
    }
    return -1;
  };
  auto not_finite = [](auto v) { return !std::isfinite(v); };
  if (t.dtype == "F32") return scan(0.0f, not_finite);
  if (t.dtype == "F64") return scan(0.0, not_finite);
  // F16 and BF16: the exponent bits all ones
  if (t.dtype == "F16") return scan(uint16_t{0}, [](uint16_t v) { return (v & 0x7c00) == 0x7c00; });
  if (t.dtype == "BF16") return scan(uint16_t{0}, [](uint16_t v) { return (v & 0x7f80) == 0x7f80; });
  return -1;
}

// Checks each tensor against its checksum, if the file has checksums, and removes them from the metadata.
template <class Fail>
void verify_checksums(SafeTensorsFile& file, Fail fail) {
  std::map<std::string, std::string> sums;
  for (auto it = file.metadata.begin(); it != file.metadata.end();) {
    if (!is_checksum_key(it->first)) {
      ++it;
      continue;
    }
    sums[it->first.substr(std::strlen(kChecksumPrefix))] = it->second;
    it = file.metadata.erase(it);
  }
  if (sums.empty()) return;
  for (const auto& [name, t] : file.tensors) {
    auto it = sums.find(name);
    if (it == sums.end()) throw fail("tensor '" + name + "' has no checksum, though the file has checksums");
    const std::string actual = crc32_hex(t.bytes);
    if (actual != it->second)
      throw fail("tensor '" + name + "': data does not match its checksum (crc32 " + actual + ", stored " +
                 it->second.substr(0, 16) + "): the file is corrupt");
    sums.erase(it);
  }
  if (!sums.empty()) throw fail("checksum for tensor '" + sums.begin()->first + "', which the file does not hold");
  file.checksummed = true;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// A header value as an error message quotes it: scalars as JSON, cut short; a short array one level deep; other
// containers by type, since dumping a deeply nested one would recurse once per level.
std::string brief(const nlohmann::json& value, bool top = true) {
  if (top && value.is_array() && value.size() <= 4) {
    std::string text = "[";
    for (const auto& element : value) text += (text.size() > 1 ? ", " : "") + brief(element, false);
    return text + "]";
  }
  if (value.is_structured()) return std::string("a JSON ") + value.type_name();
  const std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() <= 40 ? text : text.substr(0, 40) + "...";
}

// A tensor entry of the header after validation: where its bytes lie in the data section.
struct DataSpan {
  std::string name;
  uint64_t begin, end;
};

// Parses and checks one tensor entry of the header; `fail` builds the error for the file.
template <class Fail>
SafeTensor parse_entry(const std::string& name, const nlohmann::json& entry, DataSpan& span, Fail fail) {
  const std::string where = "tensor '" + name + "': ";
  if (!entry.is_object()) throw fail(where + "entry is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key)) throw fail(where + "missing \"" + key + "\"");

  SafeTensor t;
  const auto& dtype = entry["dtype"];
  if (!dtype.is_string()) throw fail(where + "\"dtype\" is not a string");
  t.dtype = dtype.get<std::string>();
  const DtypeInfo* info = find_dtype(t.dtype);
  if (!info) throw fail(where + "unknown dtype \"" + t.dtype + "\"");

  const auto& shape = entry["shape"];
  if (!shape.is_array()) throw fail(where + "\"shape\" is not an array");
  for (const auto& d : shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      throw fail(where + "\"shape\" holds " + brief(d, false) + ", not a non-negative integer");
    t.shape.push_back(d.get<int64_t>());
  }

  const auto& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    throw fail(where + "\"data_offsets\" must be two non-negative integers, got " + brief(offsets));
  span = {name, offsets[0].get<uint64_t>(), offsets[1].get<uint64_t>()};
  if (span.begin > span.end)
    throw fail(where + "data_offsets [" + std::to_string(span.begin) + ", " + std::to_string(span.end) +
               "] end before they begin");
  uint64_t nbytes = 0;
  if (!checked_nbytes(t.shape, info->size, nbytes))
    throw fail(where + "shape " + shape_text(t.shape) + " is too large");
  if (span.end - span.begin != nbytes)
    throw fail(where + "data_offsets [" + std::to_string(span.begin) + ", " + std::to_string(span.end) + "] span " +
               std::to_string(span.end - span.begin) + " bytes but " + t.dtype + " " + shape_text(t.shape) +
               " needs " + std::to_string(nbytes));
  return t;
}

}  // namespace

std::string safetensors_checksum_key(const std::string& tensor_name) { return kChecksumPrefix + tensor_name; }

std::string checksum_note(const std::string& path, const SafeTensorsFile& f) {
  if (f.checksummed) return "";
  return path + ": no checksums (not written by headroom): its tensor data was loaded unverified";
}

size_t safetensors_dtype_size(const std::string& dtype) {
  const DtypeInfo* info = find_dtype(dtype);
  if (!info) throw Error("unknown safetensors dtype \"" + dtype + "\"");
  return info->size;
}

SafeTensorsFile read_safetensors(const std::string& path) {
  auto fail = [&](const std::string& what) { return Error(path + ": " + what); };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw fail(std::filesystem::exists(path, ec) ? "not a regular file" : "no such file");
  }
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw fail("cannot read size: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fail(std::string("cannot open: ") + std::strerror(errno));

  if (file_size < 8)
    throw fail("not a safetensors file: " + std::to_string(file_size) +
               " bytes, too short for the 8-byte header length");
  uint8_t len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  const uint64_t after_len = file_size - 8;
  const bool opens_object = after_len > 0 && in.peek() == '{';
  // A foreign file (PNG, text, ...) has no '{' after 8 bytes and usually a nonsense length: say so, not "truncated".
  if (!opens_object)
    throw fail("not a safetensors file: no JSON header after the 8-byte length (header length field reads " +
               std::to_string(header_len) + ", file has " + std::to_string(file_size) + " bytes)");
  if (header_len > kMaxHeaderBytes)
    throw fail("header length " + std::to_string(header_len) + " is over the format's limit of " +
               std::to_string(kMaxHeaderBytes) + " bytes");
  if (header_len > after_len)
    throw fail("truncated or corrupt: header length " + std::to_string(header_len) + " exceeds the " +
               std::to_string(after_len) + " bytes after the length field");

  std::string header_text(header_len, '\0');
  in.read(header_text.data(), static_cast<std::streamsize>(header_len));
  if (!in) throw fail("read error in the header");
  nlohmann::json header;
  try {
    header = parse_bounded_json(header_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number such as 1e999
    std::string message = e.what();
    if (message.size() > 200) message = message.substr(0, 200) + "...";
    throw fail("header is not valid JSON: " + message);
  }
  if (!header.is_object()) throw fail("header is not a JSON object");

  SafeTensorsFile file;
  std::vector<DataSpan> spans;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) throw fail("\"__metadata__\" is not a JSON object");
      for (const auto& [mkey, mvalue] : value.items()) {
        if (!mvalue.is_string()) throw fail("\"__metadata__\" value of \"" + mkey + "\" is not a string");
        file.metadata[mkey] = mvalue.get<std::string>();
      }
      continue;
    }
    DataSpan span;
    file.tensors[key] = parse_entry(key, value, span, fail);
    spans.push_back(span);
  }

  // The data section must be covered exactly once: sorted by offset, each tensor starts where the previous ended.
  std::sort(spans.begin(), spans.end(),
            [](const DataSpan& a, const DataSpan& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  uint64_t covered = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].begin < covered)
      throw fail("data of tensor '" + spans[i].name + "' (from byte " + std::to_string(spans[i].begin) +
                 ") overlaps tensor '" + spans[i - 1].name + "' (to byte " + std::to_string(covered) + ")");
    if (spans[i].begin > covered)
      throw fail("gap in tensor data: bytes " + std::to_string(covered) + " to " + std::to_string(spans[i].begin) +
                 " before tensor '" + spans[i].name + "' belong to no tensor");
    covered = spans[i].end;
  }
  const uint64_t data_size = after_len - header_len;
  if (covered > data_size)
    throw fail("checkpoint truncated: expected " + std::to_string(covered) + " bytes of tensor data, found " +
               std::to_string(data_size));
  if (covered < data_size)
    throw fail(std::to_string(data_size - covered) + " bytes after the end of the tensor data (header accounts for " +
               std::to_string(covered) + " of " + std::to_string(data_size) + ")");

  for (const DataSpan& span : spans) {
    std::vector<uint8_t>& bytes = file.tensors[span.name].bytes;
    bytes.resize(span.end - span.begin);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!in) throw fail("read error in the data of tensor '" + span.name + "'");
  }
  verify_checksums(file, fail);
  for (const auto& [name, t] : file.tensors)
    if (const int64_t i = first_non_finite(t); i >= 0)
      throw fail("tensor '" + name + "' holds a NaN or infinity (element " + std::to_string(i) + ")");
  return file;
}

void write_safetensors(const std::string& path, const SafeTensorsFile& f) {
  struct Item {
    const std::string* name;
    const SafeTensor* tensor;
    int rank;
  };
  std::vector<Item> items;
  for (const auto& [name, t] : f.tensors) {
    const std::string where = path + ": tensor '" + name + "': ";
    if (name == "__metadata__") throw Error(where + "the name is reserved for metadata");
    const DtypeInfo* info = find_dtype(t.dtype);
    if (!info) throw Error(where + "unknown dtype \"" + t.dtype + "\"");
    uint64_t nbytes = 0;
    if (!checked_nbytes(t.shape, info->size, nbytes)) throw Error(where + "invalid shape " + shape_text(t.shape));
    if (t.bytes.size() != nbytes)
      throw Error(where + "holds " + std::to_string(t.bytes.size()) + " bytes but " + t.dtype + " " +
                  shape_text(t.shape) + " needs " + std::to_string(nbytes));
    items.push_back({&name, &t, info->rank});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.rank > b.rank; });

  std::map<std::string, std::string> metadata = f.metadata;
  for (const auto& [key, value] : f.metadata)
    if (is_checksum_key(key)) throw Error(path + ": metadata key \"" + key + "\" is reserved for checksums");
  for (const Item& item : items) metadata[safetensors_checksum_key(*item.name)] = crc32_hex(item.tensor->bytes);
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const Item& item : items) {
    const uint64_t end = offset + item.tensor->bytes.size();
    header[*item.name] = {
        {"dtype", item.tensor->dtype}, {"shape", item.tensor->shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string header_text;
  try {
    header_text = header.dump();
  } catch (const nlohmann::json::type_error& e) {
    throw Error(path + ": cannot encode the header (names and metadata must be UTF-8): " + e.what());
  }
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  write_file_atomically(path, [&](std::ostream& out) {
    uint8_t len_bytes[8];
    for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<uint8_t>(header_text.size() >> (8 * i));
    out.write(reinterpret_cast<const char*>(len_bytes), 8);
    out.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
    for (const Item& item : items)
      out.write(reinterpret_cast<const char*>(item.tensor->bytes.data()),
                static_cast<std::streamsize>(item.tensor->bytes.size()));
  });
}

namespace {

float half_to_float(uint16_t h) {
  const bool negative = h & 0x8000;
  const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float v;
  if (exponent == 0) {
    v = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
  } else if (exponent == 31) {
    v = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    v = std::bit_cast<float>(((exponent + 112) << 23) | (mantissa << 13));
  }
  return negative ? -v : v;
}

template <class T, class Out, class Convert>
std::vector<Out> convert_all(const SafeTensor& t, Convert convert) {
  const size_t n = t.bytes.size() / sizeof(T);
  std::vector<Out> out(n);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = convert(v);
  }
  return out;
}

template <class Out>
auto cast_to() {
  return [](auto v) { return static_cast<Out>(v); };
}

void check_size(const SafeTensor& t) {
  uint64_t expected = 0;
  if (!checked_nbytes(t.shape, safetensors_dtype_size(t.dtype), expected) || t.bytes.size() != expected)
    throw Error("SafeTensor " + t.dtype + " " + shape_text(t.shape) + " holds " + std::to_string(t.bytes.size()) +
                " bytes, expected " + std::to_string(expected));
}

}  // namespace

std::vector<float> to_f32(const SafeTensor& t) {
  check_size(t);
  if (t.dtype == "F32") return convert_all<float, float>(t, cast_to<float>());
  if (t.dtype == "F64") return convert_all<double, float>(t, cast_to<float>());
  if (t.dtype == "I64") return convert_all<int64_t, float>(t, cast_to<float>());
  if (t.dtype == "I32") return convert_all<int32_t, float>(t, cast_to<float>());
  if (t.dtype == "F16") return convert_all<uint16_t, float>(t, half_to_float);
  if (t.dtype == "BF16")
    return convert_all<uint16_t, float>(t, [](uint16_t v) { return std::bit_cast<float>(uint32_t{v} << 16); });
  throw Error("cannot view a " + t.dtype + " tensor as float (supported: F32, F64, I64, I32, BF16, F16)");
}

std::vector<int64_t> to_i64(const SafeTensor& t) {
  check_size(t);
  if (t.dtype == "I64") return convert_all<int64_t, int64_t>(t, cast_to<int64_t>());
  if (t.dtype == "I32") return convert_all<int32_t, int64_t>(t, cast_to<int64_t>());
  if (t.dtype == "I16") return convert_all<int16_t, int64_t>(t, cast_to<int64_t>());
  if (t.dtype == "I8") return convert_all<int8_t, int64_t>(t, cast_to<int64_t>());
  if (t.dtype == "U8" || t.dtype == "BOOL") return convert_all<uint8_t, int64_t>(t, cast_to<int64_t>());
  throw Error("cannot view a " + t.dtype + " tensor as int64 (supported: I64, I32, I16, I8, U8, BOOL)");
}

namespace {

template <class T>
SafeTensor from_values(const char* dtype, std::vector<int64_t> shape, const T* data) {
  uint64_t nbytes = 0;
  if (!checked_nbytes(shape, sizeof(T), nbytes)) throw Error("invalid tensor shape " + shape_text(shape));
  SafeTensor t{dtype, std::move(shape), std::vector<uint8_t>(nbytes)};
  if (nbytes) std::memcpy(t.bytes.data(), data, nbytes);
  return t;
}

}  // namespace

SafeTensor from_f32(std::vector<int64_t> shape, const float* data) {
  return from_values("F32", std::move(shape), data);
}
SafeTensor from_i64(std::vector<int64_t> shape, const int64_t* data) {
  return from_values("I64", std::move(shape), data);
}

}  // namespace hr
