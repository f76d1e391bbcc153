#include "framework/autocast.h"

#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "kernels/base/error.h"

namespace hr {

namespace {

struct ScopeState {
  Precision precision = Precision::F32;
  std::unordered_set<const TensorImpl*> weights;
  WeightCopies own;
  WeightCopies* copies = &own;
};

std::unique_ptr<ScopeState> g_scope;  // the open outermost scope; the framework runs ops on one thread
int64_t g_weight_conversions = 0;

Tensor convert(const Tensor& x) {
  HR_CHECK(x.dtype() == DType::F32, std::string("autocast: cannot round a ") + dtype_name(x.dtype()) + " tensor to bf16");
  Tensor y = Tensor::empty(x.shape(), x.device(), DType::BF16);
  if (x.numel() > 0) backend(x.device()).to_bf16(x.data(), y.bf16(), x.numel());
  return y;
}

}  // namespace

const char* precision_name(Precision p) { return p == Precision::BF16 ? "bf16" : "f32"; }

AutocastScope::AutocastScope(Precision p, const std::vector<Tensor>& weights, WeightCopies* kept) {
  if (g_scope) return;
  g_scope = std::make_unique<ScopeState>();
  g_scope->precision = p;
  for (const Tensor& w : weights) g_scope->weights.insert(w.impl());
  if (kept) {
    if (!kept->current) kept->of.clear();
    g_scope->copies = kept;
  }
  owner_ = true;
}

AutocastScope::~AutocastScope() {
  if (!owner_) return;
  g_scope->copies->current = true;  // the weights did not change while the scope was open
  g_scope.reset();
}

AutocastOff::AutocastOff() {
  if (!g_scope) return;
  saved_ = g_scope->precision;
  g_scope->precision = Precision::F32;
}

AutocastOff::~AutocastOff() {
  if (g_scope) g_scope->precision = saved_;
}

namespace autocast {

bool bf16() { return g_scope && g_scope->precision == Precision::BF16; }

Tensor to_bf16(const Tensor& x) {
  if (!g_scope || !g_scope->weights.count(x.impl())) return convert(x);
  auto& copies = g_scope->copies->of;
  auto it = copies.find(x.impl());
  if (it == copies.end()) {
    it = copies.emplace(x.impl(), convert(x)).first;
    ++g_weight_conversions;
  }
  return it->second;
}

int64_t weight_conversions() { return g_weight_conversions; }

}  // namespace autocast

std::string check_precision(Device d, Precision p, const std::string& where) {
  if (p == Precision::F32) return "";
  std::string why;
  switch (backend(d).bf16_support(&why)) {
    case Backend::Bf16::Native: return "";
    case Backend::Bf16::Emulated:
      return "warning: " + where + ": bf16 runs emulated on this " + device_name(d) + " (" + why +
             ", without bf16 instructions): its products are bf16's, widened to f32 for f32 kernels, and it runs "
             "no faster than f32 here";
    case Backend::Bf16::None: break;
  }
  throw ConfigError(where + ": bf16 cannot run on this " + device_name(d) + " (" + why +
                    "; bf16 needs compute capability 8.0 on a GPU): use precision f32");
}

}  // namespace hr
