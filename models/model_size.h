// What a model needs, known from its config before any of it is allocated: a size from a typo (layers.repeat 10^9,
// d_model 2^62, a batch of 10^9 rows) is refused naming its key, where it would otherwise end in bad_alloc, an int64
// overflow or hours of swapping. The estimates are lower bounds: they never refuse what would fit.
#pragma once

#include <string>

#include "framework/config.h"
#include "models/task_head.h"

namespace hr {

double machine_memory_bytes();       // physical memory
std::string bytes_text(double bytes);  // "1.5 GB"

// The parameters of the model: block's embeddings and layer groups, from their keys alone (the task head aside).
// A value the model's builder refuses counts as 0, so that the builder's message is the one a user sees.
double estimate_parameters(const Config& model, const ModelDims& dims);

// A ConfigError naming the part of the model: block that holds the most parameters (the embeddings, or a layer group
// and its repeat) unless the weights and their gradients (8 bytes a parameter) fit in the machine's memory.
void check_model_fits(const Config& model, const ModelDims& dims);

// The ConfigError of a model too large for the memory there is: its parameters and the bytes their weights and
// gradients need, `why` ("this machine has 16 GB"), then its largest part with the keys that size it (model.d_model,
// model.max_len and the vocabulary; model.ffn_dim or model.layers[i].ffn_dim, model.layers[i].repeat and its heads).
[[noreturn]] void fail_model_size(const Config& model, const ModelDims& dims, const std::string& why);

// What `headroom info` can describe of a model of shapes (build_model_shapes) without allocating it: at most 2^53
// parameters (exact in the double and int64 sums it prints) and 10^4 layers (a line each, an object each). A
// ConfigError naming the part of the model: block past either bound.
void check_model_countable(const Config& model, const ModelDims& dims);

// What training a model of `parameters` on batches of rows x row_len tokens needs at least: weights, gradients and
// one optimizer slot (12 bytes a parameter; AdamW has two) and every layer's output kept for the backward pass
// (layers x rows x row_len x d_model floats). "" when that fits in the machine's memory, else a message saying both.
std::string training_memory_problem(double parameters, int64_t layers, int64_t d_model, int64_t rows,
                                    int64_t row_len);

}  // namespace hr
