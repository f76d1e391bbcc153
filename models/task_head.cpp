#include "models/task_head.h"

#include "framework/registry.h"
#include "models/mlm_head.h"
#include "models/task_heads.h"

namespace hr {

namespace {

// The built-in heads: one line each.
Registry<HeadFactory>& heads() {
  static Registry<HeadFactory> r([](Registry<HeadFactory>& r) {
    r.add("encoder_classifier", make_sequence_classifier_head);
    r.add("encoder_span_qa", make_span_head);
    r.add("encoder_mlm", make_mlm_head);
  });
  return r;
}

}  // namespace

void register_head(const std::string& model_type, HeadFactory factory) { heads().add(model_type, std::move(factory)); }
bool head_registered(const std::string& model_type) { return heads().find(model_type) != nullptr; }

std::unique_ptr<TaskHead> build_head(const Config& m, const std::string& model_type, const HeadSettings& s) {
  const HeadFactory* f = heads().find(model_type);
  if (!f) m.fail("type", "unknown model type '" + model_type + "' (known: " + heads().known() + ")");
  return (*f)(m, s);
}

}  // namespace hr
