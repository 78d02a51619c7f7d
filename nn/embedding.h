// Embedding: a lookup table of num_embeddings vectors of size embedding_dim (torch.nn.Embedding).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "../nn/module.h"
#include "../nn/options.h"
#include "../tensor/random.h"

namespace aclgrad::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  ACLGRAD_ARG(int64_t, num_embeddings);
  ACLGRAD_ARG(int64_t, embedding_dim);
  /// A row that is initialised to zeros and never receives a gradient (negative counts from
  /// num_embeddings). max_norm, scale_grad_by_freq and sparse are not supported.
  ACLGRAD_ARG(std::optional<int64_t>, padding_idx);
};

/// forward(indices): int64 indices of any shape -> [*indices.shape, embedding_dim], the rows of
/// weight [num_embeddings, embedding_dim]; the backward scatter-adds into weight's gradient
/// (ops/embedding.h). Init: weight ~ N(0, 1), padding row zeroed.
class Embedding : public Module {
 public:
  explicit Embedding(const EmbeddingOptions& options);
  Embedding(int64_t num_embeddings, int64_t embedding_dim)
      : Embedding(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  void reset_parameters(Generator* gen = nullptr);
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;

  EmbeddingOptions options;
  Tensor weight;
};

}  // namespace aclgrad::nn
