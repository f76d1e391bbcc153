#include "train/run/checkpoint.h"

#include <map>
#include <set>

#include "framework/safetensors.h"
#include "kernels/base/error.h"
#include "models/encoder_model.h"

namespace hr {

namespace {

SafeTensor to_safetensor(const Tensor& t) {
  const std::vector<float> v = t.to_vector();
  return from_f32(t.shape(), v.data());
}

void copy_into(const std::string& path, const std::string& key, const SafeTensor& st, Tensor& dst) {
  HR_CHECK(st.shape == dst.shape(), path + ": '" + key + "' has shape " + shape_str(st.shape) + ", the model expects " +
                                        shape_str(dst.shape()));
  dst.copy_from(Tensor::from_vector(to_f32(st), dst.shape(), Device::CPU));
}

const std::string& meta(const SafeTensorsFile& f, const std::string& path, const std::string& key) {
  auto it = f.metadata.find(key);
  HR_CHECK(it != f.metadata.end(), path + ": not a headroom checkpoint (metadata '" + key + "' missing)");
  return it->second;
}

// The encoder's parameters, as EncoderModel registers them; everything else in a model is its task head's.
bool encoder_tensor(const std::string& name) {
  return name.starts_with("embeddings.") || name.starts_with("layers.") || name.starts_with("final_ln.");
}

void write_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer, const TrainState& s,
                      const std::set<std::string>& leave_out, const ModelRecord* record = nullptr) {
  SafeTensorsFile f;
  for (const auto& [name, t] : model.named_parameters())
    if (!leave_out.count(name)) f.tensors[name] = to_safetensor(t);
  if (optimizer)
    for (const auto& [name, t] : optimizer->state()) f.tensors[name] = to_safetensor(t);
  f.metadata["format"] = "headroom-checkpoint-1";
  f.metadata["step"] = std::to_string(s.step);
  f.metadata["epoch"] = std::to_string(s.epoch);
  f.metadata["batch_in_epoch"] = std::to_string(s.batch_in_epoch);
  f.metadata["rng_seed"] = std::to_string(s.rng_seed);
  f.metadata["rng_offset"] = std::to_string(s.rng_offset);
  f.metadata["best_metric"] = std::to_string(s.best_metric);
  f.metadata["best_step"] = std::to_string(s.best_step);
  f.metadata["optimizer"] = optimizer ? optimizer->name() : "none";
  f.metadata["optimizer_steps"] = std::to_string(optimizer ? optimizer->steps() : 0);
  if (record) add_model_record(f.metadata, *record);
  write_safetensors(path, f);
}

}  // namespace

void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer, const TrainState& s,
                     const ModelRecord* record) {
  write_checkpoint(path, model, optimizer, s, {}, record);
}

void save_weights(const std::string& path, const Module& model, const std::set<std::string>& leave_out) {
  write_checkpoint(path, model, nullptr, TrainState{}, leave_out);
}

TrainState load_checkpoint(const std::string& path, Module& model, Optimizer* optimizer, const ModelRecord* expected) {
  const SafeTensorsFile f = read_safetensors(path);
  HR_CHECK(meta(f, path, "format") == "headroom-checkpoint-1", path + ": unknown checkpoint format");
  if (expected) check_model_record(f.metadata, path, *expected);  // before shapes: it names the keys that differ
  for (auto& [name, t] : model.named_parameters()) {
    auto it = f.tensors.find(name);
    HR_CHECK(it != f.tensors.end(), path + ": parameter '" + name + "' missing (a checkpoint of another model?)");
    copy_into(path, name, it->second, t);
  }
  TrainState s;
  s.note = checksum_note(path, f);  // a file from before checksums: loaded unverified
  try {
    s.step = std::stoll(meta(f, path, "step"));
    s.epoch = std::stoll(meta(f, path, "epoch"));
    s.batch_in_epoch = std::stoll(meta(f, path, "batch_in_epoch"));
    s.rng_seed = std::stoull(meta(f, path, "rng_seed"));
    s.rng_offset = std::stoull(meta(f, path, "rng_offset"));
    s.best_metric = std::stod(meta(f, path, "best_metric"));
    s.best_step = std::stoll(meta(f, path, "best_step"));
  } catch (const std::logic_error&) {
    throw Error(path + ": malformed training state in the checkpoint metadata");
  }
  // a position no run reaches (every epoch takes at least one step): a damaged or edited file, which a resume would
  // continue from a place in the schedule that does not exist
  if (!(s.step >= 0 && s.epoch >= 0 && s.epoch <= s.step && s.batch_in_epoch >= 0 && s.batch_in_epoch <= s.step &&
        s.best_step >= -1 && s.best_step <= s.step))
    throw Error(path + ": the training position in its metadata is out of range (step " + std::to_string(s.step) +
                ", epoch " + std::to_string(s.epoch) + ", batch_in_epoch " + std::to_string(s.batch_in_epoch) +
                ", best_step " + std::to_string(s.best_step) + "; a run has 0 <= epoch, batch_in_epoch <= step and "
                "-1 <= best_step <= step): a damaged checkpoint; use the other one (--checkpoint) or a copy");
  if (optimizer) {
    // checkpoints from before the optimizer was recorded were all AdamW's
    const auto saved = f.metadata.count("optimizer") ? f.metadata.at("optimizer") : std::string("adamw");
    HR_CHECK(saved != "none", path + ": holds no optimizer state (a pruned model?): start a new run from it with "
                              "train.init_from instead of resuming it");
    if (saved != optimizer->name()) {
      s.note += (s.note.empty() ? "" : "; ") + path + " holds " + saved + " state; " + optimizer->name() +
                " (train.optimizer) starts from fresh state";
      return s;
    }
    NamedTensors state = optimizer->state();
    for (auto& [name, t] : state) {
      auto it = f.tensors.find(name);
      HR_CHECK(it != f.tensors.end(), path + ": optimizer state '" + name + "' missing");
      HR_CHECK(it->second.shape == t.shape(), path + ": optimizer state '" + name + "' has the wrong shape");
      t = Tensor::from_vector(to_f32(it->second), t.shape(), t.device());
    }
    optimizer->load_state(state, std::stoll(meta(f, path, "optimizer_steps")));
  }
  return s;
}

std::string load_weights(const std::string& path, EncoderModel& model) {
  const SafeTensorsFile f = read_safetensors(path);
  std::set<std::string> unused;  // the file's tensors that no parameter took (yet)
  for (const auto& [name, t] : f.tensors) unused.insert(name);
  std::string missing;
  for (auto& [name, t] : model.named_parameters()) {
    auto it = f.tensors.find(name);
    if (it == f.tensors.end()) {
      missing += (missing.empty() ? "" : ", ") + name;
      continue;
    }
    // a classifier's rows are its labels: name the two counts rather than two shapes
    const auto& have = it->second.shape;
    const int64_t labels = model.dims().num_labels;
    if (!encoder_tensor(name) && labels > 0 && !have.empty() && t.shape()[0] == labels && have[0] != labels)
      throw Error(path + ": its task head has " + std::to_string(have[0]) + " labels ('" + name + "' has shape " +
                  shape_str(have) + "), this run's data " + std::to_string(labels) + " (train.init_from keeps the "
                  "labels of the labels.txt beside the file; without one they come from the training data)");
    copy_into(path, name, it->second, t);
    unused.erase(name);
  }
  const bool has_optimizer_state = f.metadata.count("optimizer") && f.metadata.at("optimizer") != "none";
  std::string skipped;
  for (const std::string& name : unused) {
    const size_t dot = name.rfind('.');
    if (has_optimizer_state && dot != std::string::npos && f.tensors.count(name.substr(0, dot)))
      continue;  // "<param>.<slot>": the optimizer's state of a saved parameter, which a new run starts afresh
    HR_CHECK(!encoder_tensor(name), path + ": tensor '" + name + "' has no place in this model (the model: block "
                                           "has no such parameter: a checkpoint of another model?)");
    skipped += (skipped.empty() ? "" : ", ") + name;
  }
  std::string note = checksum_note(path, f);
  auto add = [&](const std::string& line) { note += (note.empty() ? "" : "\n") + line; };
  if (!missing.empty()) add("parameters not in " + path + " (kept their initialisation): " + missing);
  if (!skipped.empty())
    add("tensors of " + path + " that this model's " + model.type() + " head does not use (skipped): " + skipped);
  return note;
}

}  // namespace hr
