// Hugging Face BERT checkpoints (transformers' save_pretrained layout: config.json, model.safetensors, vocab.txt,
// tokenizer_config.json) as headroom runs. BERT is headroom's post-LN encoder with segment embeddings, erf GELU, one
// layer group per layer when heads were pruned (`attention.original_heads` keeps the indices BERT numbers them by),
// the pooler as the classifier's `pooling: cls_pooler`, and the task heads `classifier` and `qa_outputs`.
#pragma once

#include <string>
#include <vector>

namespace hr {

// What a tensor name of a BERT checkpoint is to headroom. Names are accepted with or without the "bert." prefix of
// the encoder, with LayerNorm.gamma/beta (old TensorFlow conversions) as well as weight/bias.
struct HfBertName {
  enum Kind {
    parameter,  // `name` is the headroom parameter it fills
    buffer,     // embeddings.position_ids: derived, not needed
    unused,     // pretraining heads (cls.*), and the pooler of a span QA model (BertForQuestionAnswering has none)
    unknown,
  };
  Kind kind = unknown;
  std::string name;
};
HfBertName map_hf_bert_name(const std::string& hf_name, bool classifier);

// The BERT name (with the "bert." prefix where BERT has it) of a headroom parameter of an imported model.
std::string hf_bert_name(const std::string& headroom_name);

struct HfImportArgs {
  std::string dir;      // the Hugging Face model directory
  std::string out_dir;  // the run directory to write
  std::string task;     // classification | span_qa; empty: from config.json's architectures (classification when
                        // they name no task head: BertModel, BertForMaskedLM)
  std::string pooling;  // the classifier's: cls_pooler | mean | cls; empty: sentence-transformers' pooling config
                        // (mean or cls) when the directory has one, else cls_pooler (BERT's pooler)
};

// Writes the run directory: config.yaml (a model: block that is BERT, tokenizer: the run's vocab.txt, data: the
// task without data files, train: BERT's fine-tuning defaults), vocab.txt, labels.txt (classification, from
// id2label), checkpoint-best and checkpoint-last (the same weights, no optimizer state). A classification import of a
// checkpoint with neither id2label nor a classifier (bert-base-uncased) writes no labels.txt and leaves the classifier
// out: a starting point for train.init_from, which sizes it by the training data's labels. Returns the notes to print
// once (tensors not used, a task head initialised, the pooling a sentence-transformers directory asks for).
// tokenizer_config.json gives tokenizer.lower_case and strip_accents, and its model_max_length (when below the
// positions) data.max_seq_len. hr::Error naming the file and the key or tensor for anything BERT-shaped that
// headroom cannot express (a tokenizer setting included: tokenize_chinese_chars or do_basic_tokenize false,
// never_split, another tokenizer_class), for a vocab.txt whose line count is not config.json's vocab_size or the
// token embedding's rows, and for every unknown, missing or mis-shaped tensor; UsageError when out_dir already holds
// a run.
std::vector<std::string> import_hf_bert(const HfImportArgs& args);

struct HfExportArgs {
  std::string run_dir, which = "best";  // the run and its checkpoint
  std::string out_dir;                  // the Hugging Face model directory to write
};

// Writes config.json (BertForSequenceClassification with id2label/label2id, or BertForQuestionAnswering;
// pruned_heads by original head indices), model.safetensors (BERT's names), vocab.txt and tokenizer_config.json.
// hr::Error naming the feature for a model BERT's format cannot express: pre-LN, a layer type other than `encoder`,
// talking heads, cross-layer logits, L0 gates not yet pruned, head_dim other than hidden / heads, different ffn_dims,
// no segment embeddings, a classifier without the pooler. UsageError when out_dir already holds a config.json.
void export_hf_bert(const HfExportArgs& args);

}  // namespace hr
