// The devices a tensor can live on. Below kernels/ and framework/ alike (kernels/base/ is the ground floor), so the
// backends and the framework name devices without including each other.
#pragma once

#include <cstdint>

namespace hr {

enum class Device : uint8_t { CPU = 0, CUDA = 1 };
inline const char* device_name(Device d) { return d == Device::CPU ? "cpu" : "cuda"; }

}  // namespace hr
