// SQuAD v1.1 JSON: articles, paragraphs, questions, answers and their code-point offsets; each loaded answer is then
// scored against a slice of its context with the QA metric, which takes arbitrary text.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "kernels/base/error.h"
#include "tests/fuzz/fuzz_input_file.h"
#include "train/data/squad_data.h"
#include "train/data/squad_metric.h"
#include "train/data/utf8_codepoints.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static hr::fuzz::InputFile file(".json");
  try {
    const hr::SquadData squad = hr::load_squad(file.write(data, size));
    std::map<std::string, std::string> predictions;
    for (const hr::QaExample& q : squad.eval) predictions[q.id] = hr::utf8_slice_codepoints(q.context, 0, 8);
    hr::evaluate_squad(squad.eval, predictions);
  } catch (const hr::Error&) {
  }
  return 0;
}
