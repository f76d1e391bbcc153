// safetensors reading/writing and atomic file replacement: the PyTorch fixtures, byte-exact round trips, the layout
// our writer produces (checked by parsing the raw bytes here), and a clear error for every kind of broken file.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/error_message.h"
#include "tests/repo_files.h"
#include "tests/temp_dir.h"
#include "framework/atomic_file.h"
#include "framework/regular_file.h"
#include "kernels/base/error.h"
#include "framework/safetensors.h"

namespace fs = std::filesystem;
using namespace hr;
using hr::testing::fixture;
using hr::testing::error_message;
using hr::testing::TempDir;
using hr::testing::write_file;

namespace {

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

// A raw safetensors file from a header text and a number of zero data bytes.
std::string raw_file(const std::string& header, size_t data_bytes) {
  return le64(header.size()) + header + std::string(data_bytes, '\0');
}

// Reading `path` must throw hr::Error whose message names the file and contains `expected`.
void check_read_error(const std::string& path, const std::string& expected) {
  std::string message;
  try {
    read_safetensors(path);
  } catch (const Error& e) {
    message = e.what();
  }
  INFO("message: " << message);
  CHECK_MESSAGE(!message.empty(), "no error reading " << path);
  CHECK(message.find(path) != std::string::npos);
  CHECK(message.find(expected) != std::string::npos);
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

TEST_CASE("reads the cross-entropy fixture and its values agree with the loss they claim") {
  SafeTensorsFile f = read_safetensors(fixture("cross_entropy.safetensors"));
  REQUIRE(f.tensors.size() == 4);
  const SafeTensor& logits = f.tensors.at("logits");
  CHECK(logits.dtype == "F32");
  CHECK(logits.shape == std::vector<int64_t>{6, 7});
  CHECK(f.tensors.at("labels").dtype == "I64");
  CHECK(f.tensors.at("labels").shape == std::vector<int64_t>{6});
  CHECK(f.tensors.at("grad.logits").shape == std::vector<int64_t>{6, 7});
  CHECK(f.metadata.at("ignore_index") == "-100");
  CHECK(f.metadata.at("label_smoothing") == "0.1");

  // Recompute the label-smoothed mean cross-entropy from the decoded logits and labels: this only matches when
  // every byte landed in the right place.
  std::vector<float> x = to_f32(logits);
  std::vector<int64_t> labels = to_i64(f.tensors.at("labels"));
  const double eps = 0.1;
  double total = 0;
  int counted = 0;
  for (int r = 0; r < 6; ++r) {
    if (labels[r] == -100) continue;
    REQUIRE(labels[r] >= 0);
    REQUIRE(labels[r] < 7);
    double mx = -1e30, sum = 0, mean_nll = 0;
    for (int c = 0; c < 7; ++c) mx = std::max(mx, double(x[r * 7 + c]));
    for (int c = 0; c < 7; ++c) sum += std::exp(x[r * 7 + c] - mx);
    const double log_z = mx + std::log(sum);
    for (int c = 0; c < 7; ++c) mean_nll += (log_z - x[r * 7 + c]) / 7;
    total += (1 - eps) * (log_z - x[r * 7 + labels[r]]) + eps * mean_nll;
    ++counted;
  }
  CHECK(counted == 5);  // one row carries ignore_index
  CHECK(total / counted == doctest::Approx(to_f32(f.tensors.at("loss"))[0]).epsilon(1e-5));
}

TEST_CASE("reads the encoder-layer and hard-concrete fixtures") {
  SafeTensorsFile layer = read_safetensors(fixture("encoder_layer.safetensors"));
  CHECK(layer.tensors.at("input").shape == std::vector<int64_t>{2, 5, 16});
  CHECK(layer.tensors.at("param.q.weight").shape == std::vector<int64_t>{24, 16});
  CHECK(layer.tensors.at("param.o.weight").shape == std::vector<int64_t>{16, 24});
  CHECK(layer.metadata.at("heads") == "3");
  CHECK(layer.metadata.at("head_dim") == "8");
  std::vector<int64_t> mask = to_i64(layer.tensors.at("mask"));
  REQUIRE(mask.size() == 10);
  int padded = 0;
  for (int64_t m : mask) {
    CHECK((m == 0 || m == 1));
    padded += m == 0;
  }
  CHECK(padded == 2);

  SafeTensorsFile talking = read_safetensors(fixture("encoder_layer_talking_heads.safetensors"));
  CHECK(talking.tensors.at("param.talk.logits").shape == std::vector<int64_t>{3, 3});
  CHECK(talking.tensors.at("grad.param.talk.weights").shape == std::vector<int64_t>{3, 3});
  CHECK(talking.metadata.at("talking_heads") == "True");

  // z_eval and p_open follow from log_alpha by the formulas in the file's own metadata.
  SafeTensorsFile gates = read_safetensors(fixture("hard_concrete.safetensors"));
  CHECK(gates.metadata.at("gamma") == "-0.1");
  std::vector<float> log_alpha = to_f32(gates.tensors.at("log_alpha"));
  std::vector<float> z_eval = to_f32(gates.tensors.at("z_eval"));
  std::vector<float> p_open = to_f32(gates.tensors.at("p_open"));
  REQUIRE(log_alpha.size() == 6);
  const float beta = 2.0f / 3, gamma = -0.1f, zeta = 1.1f;
  for (int i = 0; i < 6; ++i) {
    float z = std::clamp(sigmoid(log_alpha[i]) * (zeta - gamma) + gamma, 0.0f, 1.0f);
    CHECK(z_eval[i] == doctest::Approx(z).epsilon(1e-5));
    CHECK(p_open[i] == doctest::Approx(sigmoid(log_alpha[i] - beta * std::log(-gamma / zeta))).epsilon(1e-5));
  }
}

TEST_CASE("write then read round-trips every dtype, metadata and odd shapes byte-exactly") {
  TempDir tmp;
  SafeTensorsFile f;
  const float w[6] = {1.5f, -2.0f, 0.0f, 3.25f, 1e-30f, -7.0f};
  const int64_t ids[3] = {-100, 0, 1LL << 40};
  f.tensors["weight"] = from_f32({2, 3}, w);
  f.tensors["ids"] = from_i64({3}, ids);
  f.tensors["scalar"] = from_f32({}, w + 3);
  f.tensors["empty"] = from_f32({0, 4}, nullptr);
  f.tensors["bytes"] = {"U8", {5}, {1, 2, 3, 4, 5}};
  f.tensors["half"] = {"F16", {2}, {0x00, 0x3c, 0x00, 0xc0}};
  f.tensors["brain"] = {"BF16", {1}, {0x80, 0x3f}};
  f.metadata = {{"step", "120"}, {"note", "héadroom \"quoted\""}};

  const std::string a = tmp / "a.safetensors", b = tmp / "b.safetensors";
  write_safetensors(a, f);
  SafeTensorsFile back = read_safetensors(a);
  CHECK(back.metadata == f.metadata);
  REQUIRE(back.tensors.size() == f.tensors.size());
  for (const auto& [name, t] : f.tensors) {
    INFO(name);
    CHECK(back.tensors.at(name).dtype == t.dtype);
    CHECK(back.tensors.at(name).shape == t.shape);
    CHECK(back.tensors.at(name).bytes == t.bytes);
  }
  CHECK(to_f32(back.tensors.at("weight")) == std::vector<float>(w, w + 6));
  CHECK(to_i64(back.tensors.at("ids")) == std::vector<int64_t>(ids, ids + 3));
  CHECK(to_f32(back.tensors.at("half")) == std::vector<float>{1.0f, -2.0f});
  CHECK(to_f32(back.tensors.at("brain")) == std::vector<float>{1.0f});

  write_safetensors(b, back);
  CHECK(read_file_bytes(a) == read_file_bytes(b));
  CHECK(fs::directory_iterator(tmp.path) != fs::directory_iterator());
  for (const auto& entry : fs::directory_iterator(tmp.path))  // no temp files left behind
    CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("rewritten fixtures keep every tensor and the metadata") {
  TempDir tmp;
  for (const char* name : {"cross_entropy.safetensors", "encoder_layer.safetensors",
                           "encoder_layer_talking_heads.safetensors", "hard_concrete.safetensors"}) {
    INFO(name);
    SafeTensorsFile f = read_safetensors(fixture(name));
    write_safetensors(tmp / name, f);
    SafeTensorsFile back = read_safetensors(tmp / name);
    CHECK(back.metadata == f.metadata);
    REQUIRE(back.tensors.size() == f.tensors.size());
    for (const auto& [key, t] : f.tensors) CHECK(back.tensors.at(key).bytes == t.bytes);
  }
}

TEST_CASE("the written layout follows the safetensors package: padded header, contiguous data by alignment") {
  TempDir tmp;
  SafeTensorsFile f;
  const float v[2] = {1, 2};
  const int64_t i = 7;
  f.tensors["a"] = {"U8", {3}, {9, 8, 7}};
  f.tensors["b"] = from_f32({2}, v);
  f.tensors["c"] = from_i64({1}, &i);
  f.tensors["d"] = from_f32({1}, v);
  f.tensors["e"] = {"F16", {1}, {0, 0x3c}};
  f.metadata["format"] = "pt";
  const std::string path = tmp / "layout.safetensors";
  write_safetensors(path, f);

  const std::string raw = read_file_bytes(path);
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<uint8_t>(raw[k]);
  CHECK(n % 8 == 0);
  const std::string header = raw.substr(8, n);
  CHECK(header.front() == '{');
  CHECK(header.find_last_not_of(' ') == header.find_last_of('}'));  // only spaces pad the JSON
  nlohmann::json h = nlohmann::json::parse(header);
  CHECK(h["__metadata__"]["format"] == "pt");
  // Descending element size, then name: c (I64), b and d (F32), e (F16), a (U8); no gaps.
  CHECK(h["c"]["data_offsets"] == nlohmann::json({0, 8}));
  CHECK(h["b"]["data_offsets"] == nlohmann::json({8, 16}));
  CHECK(h["d"]["data_offsets"] == nlohmann::json({16, 20}));
  CHECK(h["e"]["data_offsets"] == nlohmann::json({20, 22}));
  CHECK(h["a"]["data_offsets"] == nlohmann::json({22, 25}));
  CHECK(h["b"]["shape"] == nlohmann::json({2}));
  CHECK(h["b"]["dtype"] == "F32");
  CHECK(raw.size() == 8 + n + 25);
  float b1;
  std::memcpy(&b1, raw.data() + 8 + n + 12, 4);
  CHECK(b1 == 2.0f);
  CHECK(raw.substr(8 + n + 22) == "\x09\x08\x07");
}

TEST_CASE("truncated files give a clear error naming the file") {
  TempDir tmp;
  const std::string good = read_file_bytes(fixture("cross_entropy.safetensors"));
  REQUIRE(good.size() == 836);  // 8 + 440 header + 388 data
  const std::string path = tmp / "cut.safetensors";
  struct Cut {
    size_t at;
    std::string expected;
  };
  for (const Cut& cut : {Cut{0, "not a safetensors file: 0 bytes"}, Cut{5, "not a safetensors file: 5 bytes"},
                         Cut{8, "not a safetensors file"}, Cut{100, "header length 440 exceeds the 92 bytes"},
                         Cut{447, "header length 440 exceeds the 439 bytes"},
                         Cut{448, "checkpoint truncated: expected 388 bytes of tensor data, found 0"},
                         Cut{600, "checkpoint truncated: expected 388 bytes of tensor data, found 152"},
                         Cut{835, "checkpoint truncated: expected 388 bytes of tensor data, found 387"}}) {
    INFO("cut at " << cut.at);
    write_file(path, good.substr(0, cut.at));
    check_read_error(path, cut.expected);
  }
}

TEST_CASE("foreign and corrupt files give a clear error naming the file") {
  TempDir tmp;
  const std::string path = tmp / "bad.safetensors";
  const std::string good = read_file_bytes(fixture("cross_entropy.safetensors"));

  SUBCASE("header length lies") {
    write_file(path, le64(1000000) + good.substr(8));
    check_read_error(path, "header length 1000000 exceeds");
    write_file(path, le64(100) + good.substr(8));
    check_read_error(path, "header is not valid JSON");
  }
  SUBCASE("a PNG") {
    static const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x03\x84\0\0\x02X\x08\x06\0\0\0";
    write_file(path, std::string(png, sizeof png - 1));  // the first 29 bytes of a PNG
    check_read_error(path, "not a safetensors file");
  }
  SUBCASE("a text file") {
    write_file(path, "epoch,loss\n1,0.93\n2,0.71\n");
    check_read_error(path, "not a safetensors file");
  }
  SUBCASE("a missing file") { check_read_error(tmp / "nope.safetensors", "no such file"); }
  SUBCASE("a number past the range of double (found by fuzzing)") {
    write_file(path, raw_file(R"({"a":{"dtype":"U8","shape":[1e999],"data_offsets":[0,1]}})", 1));
    check_read_error(path, "header is not valid JSON: [json.exception.out_of_range.406] number overflow parsing '1e999'");
  }
  SUBCASE("header is JSON but not an object") {
    write_file(path, raw_file("{\"a\": 1", 0));
    check_read_error(path, "not valid JSON");
  }
  SUBCASE("tensor entries with problems") {
    struct Case {
      std::string header;
      size_t data;
      std::string expected;
    };
    for (const Case& c : {
             Case{R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8, "tensor 'a': missing \"dtype\""},
             Case{R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", 8, "tensor 'a': missing \"shape\""},
             Case{R"({"a":{"dtype":"F32","shape":[2]}})", 8, "tensor 'a': missing \"data_offsets\""},
             Case{R"({"a":{"dtype":"F17","shape":[2],"data_offsets":[0,8]}})", 8, "unknown dtype \"F17\""},
             Case{R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, "not a non-negative integer"},
             Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8, "must be two non-negative integers"},
             Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, "end before they begin"},
             Case{R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "span 8 bytes but F32 [3] needs 12"},
             Case{R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8, "too large"},
             Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                      "b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                  12, "data of tensor 'b' (from byte 4) overlaps tensor 'a' (to byte 8)"},
             Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                      "b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
                  20, "gap in tensor data: bytes 8 to 12"},
             Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12, "gap in tensor data: bytes 0 to 4"},
             Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 10, "2 bytes after the end"},
             Case{R"({"__metadata__":{"step":3}})", 0, "value of \"step\" is not a string"},
             Case{R"({"__metadata__":[]})", 0, "\"__metadata__\" is not a JSON object"},
             Case{R"({"a":[1,2]})", 0, "tensor 'a': entry is not a JSON object"},
         }) {
      INFO(c.header);
      write_file(path, raw_file(c.header, c.data));
      check_read_error(path, c.expected);
    }
  }
  SUBCASE("a header that is a JSON array") {
    write_file(path, le64(5) + "[1,2]");
    check_read_error(path, "not a safetensors file");
  }
}

TEST_CASE("the reader enforces the format's header rules") {
  TempDir tmp;
  const std::string path = tmp / "bad.safetensors";
  const std::string good = read_file_bytes(fixture("cross_entropy.safetensors"));
  SUBCASE("a header longer than 100 MB is refused before anything is allocated") {
    write_file(path, le64(100'000'001) + good.substr(8));
    check_read_error(path, "header length 100000001 is over the format's limit of 100000000 bytes");
  }
  SUBCASE("a header that is not UTF-8") {
    write_file(path, raw_file("{\"\xff\xfe\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1));
    check_read_error(path, "header is not valid JSON");
  }
  SUBCASE("a header nested too deep is refused while it is parsed; a nested value is named by its type") {
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    write_file(path, raw_file(R"({"a":{"dtype":"U8","shape":[)" + deep + R"(],"data_offsets":[0,1]}})", 1));
    check_read_error(path, "header is not valid JSON: nested deeper than 100 levels");
    const std::string nested = std::string(90, '[') + std::string(90, ']');
    write_file(path, raw_file(R"({"a":{"dtype":"U8","shape":[)" + nested + R"(],"data_offsets":[0,1]}})", 1));
    check_read_error(path, "tensor 'a': \"shape\" holds a JSON array, not a non-negative integer");
    write_file(path, raw_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,)" + nested + "]}}", 1));
    check_read_error(path, "\"data_offsets\" must be two non-negative integers, got [0, a JSON array]");
  }
  SUBCASE("data ending before the end of the file") {
    write_file(path, good + '\0');
    check_read_error(path, "1 bytes after the end of the tensor data");
  }
}

namespace {

// `f` written to `path`, with byte `offset` of the file then flipped.
void write_with_flipped_byte(const std::string& path, const SafeTensorsFile& f, size_t offset) {
  write_safetensors(path, f);
  std::string raw = read_file_bytes(path);
  REQUIRE(offset < raw.size());
  raw[offset] = static_cast<char>(raw[offset] ^ 0x10);
  write_file(path, raw);
}

}  // namespace

TEST_CASE("files headroom writes carry one CRC-32 per tensor, verified on load") {
  TempDir tmp;
  const std::string path = tmp / "sum.safetensors";
  SafeTensorsFile f;
  const float w[3] = {1.0f, 2.0f, 3.0f};
  f.tensors["w"] = from_f32({3}, w);
  f.tensors["b"] = {"U8", {2}, {7, 9}};
  f.metadata["step"] = "4";
  write_safetensors(path, f);

  const std::string raw = read_file_bytes(path);
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<uint8_t>(raw[k]);
  const nlohmann::json meta = nlohmann::json::parse(raw.substr(8, n))["__metadata__"];
  CHECK(meta[safetensors_checksum_key("w")] == "b20e96b1");  // zlib.crc32 of the 12 bytes of 1.0f, 2.0f, 3.0f
  CHECK(meta[safetensors_checksum_key("b")] == "77443c9c");  // zlib.crc32(b"\x07\x09")
  const SafeTensorsFile back = read_safetensors(path);
  CHECK(back.checksummed);
  CHECK(checksum_note(path, back).empty());
  CHECK(back.metadata == f.metadata);  // the checksums are the format's business, not the caller's

  SUBCASE("a flipped byte in a tensor's data names the file and the tensor") {
    write_with_flipped_byte(path, f, raw.size() - 1);  // the U8 tensor 'b' is stored last
    check_read_error(path, "tensor 'b': data does not match its checksum");
    write_with_flipped_byte(path, f, 8 + n);  // the F32 tensor 'w' first
    check_read_error(path, "tensor 'w': data does not match its checksum");
  }
  SUBCASE("a checksum removed or added") {
    nlohmann::json header = nlohmann::json::parse(raw.substr(8, n));
    header["__metadata__"].erase(safetensors_checksum_key("w"));
    write_file(path, le64(header.dump().size()) + header.dump() + raw.substr(8 + n));
    check_read_error(path, "tensor 'w' has no checksum, though the file has checksums");
    header["__metadata__"][safetensors_checksum_key("w")] = meta[safetensors_checksum_key("w")];
    header["__metadata__"][safetensors_checksum_key("gone")] = "00000000";
    write_file(path, le64(header.dump().size()) + header.dump() + raw.substr(8 + n));
    check_read_error(path, "checksum for tensor 'gone', which the file does not hold");
  }
  SUBCASE("the writer keeps the checksum keys to itself") {
    f.metadata[safetensors_checksum_key("w")] = "0";
    CHECK(error_message([&] { write_safetensors(path, f); }).find("is reserved for checksums") != std::string::npos);
  }
}

TEST_CASE("files without checksums load, with a note the caller can print") {
  const std::string hf = hr::testing::repo_path("tests/fixtures/hf_bert/bert_tiny_qa/model.safetensors");
  const SafeTensorsFile f = read_safetensors(hf);
  CHECK(!f.checksummed);
  CHECK(f.tensors.count("qa_outputs.weight") == 1);
  CHECK(checksum_note(hf, f) == hf + ": no checksums (not written by headroom): its tensor data was loaded unverified");
}

TEST_CASE("a NaN or infinity in a floating-point tensor is an error naming the file and the tensor") {
  TempDir tmp;
  const std::string path = tmp / "nan.safetensors";
  SafeTensorsFile f;
  const float ok[2] = {1.0f, 2.0f};
  f.tensors["fine"] = from_f32({2}, ok);
  const int64_t big = -1;  // all bits set: a NaN pattern, but an integer tensor is not checked
  f.tensors["ids"] = from_i64({1}, &big);
  write_safetensors(path, f);
  CHECK(read_safetensors(path).tensors.size() == 2);

  const float bad[3] = {0.0f, 1.0f, std::nanf("")};
  f.tensors["w"] = from_f32({3}, bad);
  write_safetensors(path, f);  // a diverged run may save NaN weights; loading them is the error
  check_read_error(path, "tensor 'w' holds a NaN or infinity (element 2)");
  f.tensors["w"] = {"F16", {2}, {0x00, 0x3c, 0x00, 0xfc}};  // 1, -inf
  write_safetensors(path, f);
  check_read_error(path, "tensor 'w' holds a NaN or infinity (element 1)");
  f.tensors["w"] = {"BF16", {1}, {0xc0, 0x7f}};  // NaN
  write_safetensors(path, f);
  check_read_error(path, "tensor 'w' holds a NaN or infinity (element 0)");
  const double inf = INFINITY;
  f.tensors["w"] = {"F64", {1}, std::vector<uint8_t>(8)};
  std::memcpy(f.tensors["w"].bytes.data(), &inf, 8);
  write_safetensors(path, f);
  check_read_error(path, "tensor 'w' holds a NaN or infinity (element 0)");
}

TEST_CASE("to_f32 and to_i64 decode each supported dtype") {
  // F16: 1, -2, 65504 (largest), 2^-24 (smallest subnormal), +inf.
  SafeTensor half{"F16", {5}, {0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00, 0x00, 0x7c}};
  std::vector<float> h = to_f32(half);
  CHECK(h[0] == 1.0f);
  CHECK(h[1] == -2.0f);
  CHECK(h[2] == 65504.0f);
  CHECK(h[3] == std::ldexp(1.0f, -24));
  CHECK(std::isinf(h[4]));
  SafeTensor bf16{"BF16", {2}, {0x80, 0x3f, 0xa0, 0xc0}};
  CHECK(to_f32(bf16) == std::vector<float>{1.0f, -5.0f});
  const double d[2] = {0.5, -1e10};
  SafeTensor f64{"F64", {2}, std::vector<uint8_t>(16)};
  std::memcpy(f64.bytes.data(), d, 16);
  CHECK(to_f32(f64) == std::vector<float>{0.5f, -1e10f});
  const int32_t i[2] = {-3, 70000};
  SafeTensor i32{"I32", {2}, std::vector<uint8_t>(8)};
  std::memcpy(i32.bytes.data(), i, 8);
  CHECK(to_f32(i32) == std::vector<float>{-3.0f, 70000.0f});
  CHECK(to_i64(i32) == std::vector<int64_t>{-3, 70000});
  CHECK(to_i64(SafeTensor{"BOOL", {2}, {1, 0}}) == std::vector<int64_t>{1, 0});
  CHECK_THROWS_AS(to_f32(SafeTensor{"U8", {1}, {1}}), Error);
  CHECK_THROWS_AS(to_i64(half), Error);
  CHECK_THROWS_AS(to_f32(SafeTensor{"F32", {2}, {0, 0, 0}}), Error);  // bytes do not match the shape
}

TEST_CASE("write_safetensors rejects inconsistent tensors and unwritable paths, naming them") {
  TempDir tmp;
  SafeTensorsFile f;
  f.tensors["w"] = {"F32", {2}, {0, 0, 0}};
  const std::string path = tmp / "w.safetensors";
  CHECK(error_message([&] { write_safetensors(path, f); }).find(path + ": tensor 'w': holds 3 bytes") == 0);
  CHECK(!fs::exists(path));
  f.tensors["w"] = {"F33", {1}, {0, 0, 0, 0}};
  CHECK(error_message([&] { write_safetensors(path, f); }).find("unknown dtype \"F33\"") != std::string::npos);
  f.tensors["w"] = {"F32", {1}, {0, 0, 0, 0}};
  const std::string missing_dir = tmp / "no/such/dir/w.safetensors";
  CHECK(error_message([&] { write_safetensors(missing_dir, f); }).find(missing_dir) != std::string::npos);
}

TEST_CASE("write_file_atomically replaces the file, or leaves the old one when writing fails") {
  TempDir tmp;
  const std::string path = tmp / "report.txt";
  write_file_atomically(path, [](std::ostream& out) { out << "first"; });
  CHECK(read_file_bytes(path) == "first");
  write_file_atomically(path, [](std::ostream& out) { out << "second version"; });
  CHECK(read_file_bytes(path) == "second version");

  CHECK_THROWS_AS(write_file_atomically(path,
                                        [](std::ostream& out) {
                                          out << std::string(200000, 'x');  // past the stream buffer
                                          throw Error("interrupted");
                                        }),
                  Error);
  CHECK(read_file_bytes(path) == "second version");
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tmp.path)) ++files;
  CHECK(files == 1);  // the temp file is gone

  const std::string bad = tmp / "missing/report.txt";
  CHECK(error_message([&] { write_file_atomically(bad, [](std::ostream& out) { out << "x"; }); })
            .find("cannot write " + bad) == 0);
}
