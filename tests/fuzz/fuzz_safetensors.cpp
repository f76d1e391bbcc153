// safetensors: the 8-byte length, the JSON header and tensor table, the tiling of the data, the checksums and the
// finiteness scan; every tensor that loads is then converted, so a table that lies about sizes would be caught here.
#include <cstddef>
#include <cstdint>

#include "framework/safetensors.h"
#include "kernels/base/error.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static hr::fuzz::InputFile file(".safetensors");
  try {
    const hr::SafeTensorsFile f = hr::read_safetensors(file.write(data, size));
    for (const auto& [name, t] : f.tensors) {
      try {
        hr::to_f32(t);
      } catch (const hr::Error&) {  // a dtype with no float view
      }
    }
  } catch (const hr::Error&) {
  }
  return 0;
}
