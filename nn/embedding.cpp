#include "nn/embedding.h"

#include "autograd/grad_mode.h"
#include "nn/init.h"
#include "ops/embedding.h"
#include "tensor/creation.h"

namespace aclgrad::nn {

Embedding::Embedding(const EmbeddingOptions& options) : Module("Embedding"), options(options) {
  const int64_t n = options.num_embeddings(), d = options.embedding_dim();
  check(n >= 0 && d >= 0, "Embedding: num_embeddings and embedding_dim must be >= 0, got ", n,
        " and ", d);
  if (const auto& p = options.padding_idx()) {
    check<IndexError>(*p >= -n && *p < n, "Embedding: padding_idx must be within num_embeddings ",
                      "(", n, "), got ", *p);
    this->options.padding_idx(*p < 0 ? *p + n : *p);
  }
  weight = register_parameter("weight", empty({n, d}));
  reset_parameters();
}

void Embedding::reset_parameters(Generator* gen) {
  init::normal_(weight, 0.0, 1.0, gen);
  if (const auto& p = options.padding_idx()) {
    NoGradGuard no_grad;
    weight.select(0, *p).fill_(0);
  }
}

Tensor Embedding::forward(const Tensor& indices) {
  return embedding(weight, indices, options.padding_idx());
}

std::string Embedding::extra_repr() const {
  std::string s =
      std::to_string(options.num_embeddings()) + ", " + std::to_string(options.embedding_dim());
  if (options.padding_idx()) s += ", padding_idx=" + std::to_string(*options.padding_idx());
  return s;
}

}  // namespace aclgrad::nn
