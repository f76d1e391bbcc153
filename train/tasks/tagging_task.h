// Token classification (named entities): CoNLL-style files (train/data/conll_data.h) -> one tag per word, scored by
// entity-level F1 as conlleval scores it. A row is [CLS] the wordpieces of each word [SEP]; a word's first piece
// carries its tag and the loss, its other pieces are ignored. Words past data.max_seq_len (or model.max_len) are
// predicted O, so evaluation still counts their entities. The worked example of docs/extending.md "Adding a task": the
// task, its head and its data: keys (train_path, eval_path, test_path) are this file and tagging_task.cpp, registered
// in one line of train/tasks/task_registry.cpp.
#pragma once

#include <memory>

#include "train/tasks/task_registry.h"

namespace hr {

// data.task: tagging; tags.txt in the run directory fixes the tag ids of a resumed or served run.
std::unique_ptr<Task> make_tagging_task(const TaskContext& ctx);
// model.type: encoder_tagger: dropout, then a linear layer per token (B, T, D) -> (B, T, tags), parameters tagger.*.
std::unique_ptr<TaskHead> make_tagging_head(const Config& model_block, const HeadSettings& settings);

}  // namespace hr
