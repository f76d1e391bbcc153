#include "train/tools/info.h"

#include <cstdio>

namespace hr {

void print_model_info(std::ostream& os, const EncoderModel& model, int64_t T) {
  char line[256];
  std::snprintf(line, sizeof line, "%-6s %-10s %6s %9s %8s %12s %14s %12s\n", "layer", "type", "heads", "head_dim",
                "ffn_dim", "parameters", "attn MFLOP/tok", "ffn MFLOP/tok");
  os << line;
  int64_t layer_params = 0;
  double attn = 0, ffn = 0;
  const auto stats = model.layer_stats(T);
  for (size_t i = 0; i < stats.size(); ++i) {
    const LayerStats& s = stats[i];
    std::snprintf(line, sizeof line, "%-6zu %-10s %6lld %9lld %8lld %12lld %14.3f %12.3f\n", i, s.type.c_str(),
                  static_cast<long long>(s.heads), static_cast<long long>(s.head_dim), static_cast<long long>(s.ffn_dim),
                  static_cast<long long>(s.parameters), s.attention_flops / 1e6, s.ffn_flops / 1e6);
    os << line;
    layer_params += s.parameters;
    attn += s.attention_flops;
    ffn += s.ffn_flops;
  }
  const int64_t total = model.num_parameters();
  std::snprintf(line, sizeof line,
                "layers: %lld parameters; embeddings, final norm and head: %lld; total: %lld parameters\n"
                "forward FLOPs per token at sequence length %lld: attention %.3f M, ffn %.3f M, total %.3f M "
                "(training is about 3x)\n",
                static_cast<long long>(layer_params), static_cast<long long>(total - layer_params),
                static_cast<long long>(total), static_cast<long long>(T), attn / 1e6, ffn / 1e6, (attn + ffn) / 1e6);
  os << line;
}

}  // namespace hr
