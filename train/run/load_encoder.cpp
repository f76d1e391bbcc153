#include "train/run/load_encoder.h"

#include <filesystem>

#include "framework/safetensors.h"
#include "kernels/base/error.h"
#include "train/run/trainer.h"

namespace fs = std::filesystem;

namespace hr {

LoadedEncoder load_encoder(const std::string& dir, const std::string& which) {
  LoadedEncoder e;
  HR_CHECK(fs::exists(dir + "/config.yaml"), dir + " is not a headroom run directory (no config.yaml)");
  e.config = load_run_config(dir + "/config.yaml", {}, /*check_files=*/false);
  if (e.config.data.task != "classification" || fs::exists(dir + "/labels.txt")) {
    LoadedRun r = load_run(dir, which, /*load_data=*/false);
    return {std::move(r.config), std::move(r.tokenizer), std::move(r.model)};
  }
  HR_CHECK(fs::exists(dir + "/vocab.txt"), dir + "/vocab.txt is missing: the run's vocabulary cannot be rebuilt");
  e.tokenizer = std::make_unique<Tokenizer>(
      Vocab::load(dir + "/vocab.txt"), BasicTokenizer(e.config.tokenizer.lower_case, e.config.tokenizer.strip_accents));
  e.model = build_model(e.config.root.child("model"), ModelDims{e.tokenizer->vocab().size(), 1, 0});
  const std::string ckpt = checkpoint_path(dir, which);
  const SafeTensorsFile f = read_safetensors(ckpt);
  const std::string head = std::string(e.model->head().name()) + ".";
  for (auto& [name, param] : e.model->named_parameters()) {
    const auto it = f.tensors.find(name);
    if (it == f.tensors.end()) {
      HR_CHECK(name.starts_with(head), ckpt + ": parameter '" + name + "' missing");
      continue;
    }
    HR_CHECK(it->second.shape == param.shape(), ckpt + ": '" + name + "' does not have the model's shape");
    param.copy_from(Tensor::from_vector(to_f32(it->second), param.shape(), Device::CPU));
  }
  e.model->to(e.config.train.device);
  return e;
}

}  // namespace hr
