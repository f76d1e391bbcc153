// Hugging Face BERT checkpoints (transformers' save_pretrained layout: config.json, model.safetensors, vocab.txt,
// tokenizer_config.json) as headroom runs. BERT is headroom's post-LN encoder with segment embeddings, erf GELU, one
// layer group per layer when heads were pruned (`attention.original_heads` keeps the indices BERT numbers them by),
// the pooler as the classifier's `pooling: cls_pooler`, and the task heads `classifier`, `qa_outputs` and
// BertForMaskedLM's `cls.predictions` (headroom's encoder_mlm head `mlm`, its decoder tied to the word embeddings).
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
    tied,       // a copy of the parameter `name` (the MLM decoder's weight and bias): must equal its tensor
    unused,     // pretraining heads (cls.*; of an MLM model only the next-sentence head cls.seq_relationship), and
                // the pooler of a model without a sequence classifier (BertForQuestionAnswering, BertForMaskedLM)
    unknown,
  };
  Kind kind = unknown;
  std::string name;
};
// `task`: classification | span_qa | mlm, the head the model has.
HfBertName map_hf_bert_name(const std::string& hf_name, const std::string& task);

// The BERT name (with the "bert." prefix where BERT has it) of a headroom parameter of an imported model.
std::string hf_bert_name(const std::string& headroom_name);

struct HfImportArgs {
  std::string dir;      // the Hugging Face model directory
  std::string out_dir;  // the run directory to write
  std::string task;     // classification | span_qa | mlm; empty: from config.json's architectures (mlm for
                        // BertForMaskedLM and BertForPreTraining; classification when they name no task head:
                        // BertModel)
  std::string pooling;  // the classifier's: cls_pooler | mean | cls; empty: sentence-transformers' pooling config
                        // (mean or cls) when the directory has one, else cls_pooler (BERT's pooler)
};

// Writes the run directory: config.yaml (a model: block that is BERT, tokenizer: the run's vocab.txt, data: the
// task without data files (mlm: {task: mlm, format: text}), train: BERT's fine-tuning defaults), vocab.txt,
// labels.txt (classification, from id2label), checkpoint-best and checkpoint-last (the same weights, no optimizer state). A classification import of a
// checkpoint with neither id2label nor a classifier (bert-base-uncased) writes no labels.txt and leaves the classifier
// out: a starting point for train.init_from, which sizes it by the training data's labels. Returns the notes to print
// once (tensors not used, a task head initialised, the pooling a sentence-transformers directory asks for).
// tokenizer_config.json gives tokenizer.lower_case and strip_accents, and its model_max_length (when below the
// positions) data.max_seq_len. hr::Error naming the file and the key or tensor for anything BERT-shaped that
// headroom cannot express (a tokenizer setting included: tokenize_chinese_chars or do_basic_tokenize false,
// never_split, another tokenizer_class), for a vocab.txt whose line count is not config.json's vocab_size or the
// token embedding's rows, and for every unknown, missing or mis-shaped tensor; UsageError when out_dir exists and is
// not an empty directory (require_new_or_empty_dir). An MLM import (model.type encoder_mlm) takes cls.predictions.transform.* and cls.predictions.bias as the
// head; the decoder is the word embeddings: cls.predictions.decoder.weight, when present, must equal them and
// cls.predictions.decoder.bias cls.predictions.bias (standing in for it when that is absent); a difference is an
// error naming the tensor and the file. cls.seq_relationship.* (BertForPreTraining's next-sentence head) is said
// in a note and not used.
std::vector<std::string> import_hf_bert(const HfImportArgs& args);

struct HfExportArgs {
  std::string run_dir, which = "best";  // the run and its checkpoint
  std::string out_dir;                  // the Hugging Face model directory to write
  bool force = false;                   // write into a non-empty out_dir (never into a run directory)
};

// Writes config.json (BertForSequenceClassification with id2label/label2id, BertForQuestionAnswering, or
// BertForMaskedLM with tie_word_embeddings for an encoder_mlm run; pruned_heads by original head indices),
// model.safetensors (BERT's names; the MLM decoder is tied, so neither cls.predictions.decoder.weight nor .bias is
// written, as transformers' save_pretrained leaves them out), vocab.txt and tokenizer_config.json.
// hr::Error naming the feature for a model BERT's format cannot express: pre-LN, a layer type other than `encoder`,
// talking heads, cross-layer logits, L0 gates not yet pruned, head_dim other than hidden / heads, different ffn_dims,
// no segment embeddings, a classifier without the pooler. UsageError, before anything is written, when out_dir is
// a run directory (even with `force`) or a file, or is not empty and `force` is false: `force` lets the export
// replace its four files in a directory that holds others, and leaves those others alone. Each file is replaced
// atomically.
void export_hf_bert(const HfExportArgs& args);

}  // namespace hr
