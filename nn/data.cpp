// Datasets: stacking, TensorDataset, the (Fashion-)MNIST loader.
#include "nn/data.h"

#include <cstring>
#include <filesystem>

#include "nn/idx.h"
#include "tensor/creation.h"

namespace aclgrad::data {

namespace {

// Stacks same-shaped tensors along a new dim 0.
Tensor stack_rows(const std::vector<Tensor>& rows, const char* what) {
  check(!rows.empty(), "Dataset::get_batch: empty batch");
  Shape shape = rows[0].sizes();
  for (size_t i = 1; i < rows.size(); ++i) {
    check<ShapeError>(rows[i].sizes() == shape && rows[i].dtype() == rows[0].dtype(),
                      "Dataset::get_batch: ", what, " of example ", i, " has shape ",
                      rows[i].sizes(), " and dtype ", rows[i].dtype(), ", example 0 has ", shape,
                      " and ", rows[0].dtype(), "; examples must match to be batched");
  }
  shape.insert(shape.begin(), static_cast<int64_t>(rows.size()));
  Tensor out = empty(shape, rows[0].dtype());
  for (size_t i = 0; i < rows.size(); ++i) out.select(0, static_cast<int64_t>(i)).copy_(rows[i]);
  return out;
}

// Copies rows indices of a contiguous [N, ...] tensor into a new [B, ...] tensor.
Tensor gather_rows(const Tensor& t, std::span<const int64_t> indices) {
  Shape shape = t.sizes();
  const int64_t n = shape[0];
  shape[0] = static_cast<int64_t>(indices.size());
  Tensor out = empty(shape, t.dtype());
  const size_t row_bytes = n == 0 ? 0 : static_cast<size_t>(t.numel() / n * t.element_size());
  const char* src = static_cast<const char*>(t.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (size_t i = 0; i < indices.size(); ++i) {
    check<IndexError>(indices[i] >= 0 && indices[i] < n, "TensorDataset: index ", indices[i],
                      " is out of range for a dataset of ", n, " examples");
    std::memcpy(dst + i * row_bytes, src + indices[i] * row_bytes, row_bytes);
  }
  return out;
}

}  // namespace

Example Dataset::get_batch(std::span<const int64_t> indices) const {
  std::vector<Tensor> data, target;
  for (int64_t i : indices) {
    Example e = get(i);
    data.push_back(std::move(e.data));
    target.push_back(std::move(e.target));
  }
  return {stack_rows(data, "data"), stack_rows(target, "target")};
}

TensorDataset::TensorDataset(Tensor data, Tensor target) {
  check<ShapeError>(data.dim() >= 1 && target.dim() >= 1 && data.size(0) == target.size(0),
                    "TensorDataset: data of shape ", data.sizes(), " and target of shape ",
                    target.sizes(), " must have the same size along dim 0");
  data_ = data.detach().contiguous();
  target_ = target.detach().contiguous();
}

Example TensorDataset::get(int64_t index) const {
  check<IndexError>(index >= 0 && index < size(), "TensorDataset: index ", index,
                    " is out of range for a dataset of ", size(), " examples");
  return {data_.select(0, index), target_.select(0, index)};
}

Example TensorDataset::get_batch(std::span<const int64_t> indices) const {
  return {gather_rows(data_, indices), gather_rows(target_, indices)};
}

TensorDataset load_mnist(const std::string& root, bool train) {
  const std::string prefix = (std::filesystem::path(root) / (train ? "train" : "t10k")).string();
  auto find = [&](const std::string& stem) {
    const std::string plain = prefix + stem;
    if (std::filesystem::exists(plain)) return plain;
    const std::string gz = plain + ".gz";
    check(std::filesystem::exists(gz), "load_mnist: neither '", plain, "' nor '", gz, "' exists");
    return gz;
  };
  const std::string images_path = find("-images-idx3-ubyte");
  const std::string labels_path = find("-labels-idx1-ubyte");
  Tensor images = read_idx_images(images_path);
  Tensor labels = read_idx_labels(labels_path);
  check(images.size(0) == labels.size(0), "load_mnist: '", images_path, "' holds ", images.size(0),
        " images but '", labels_path, "' holds ", labels.size(0), " labels");
  return TensorDataset(images, labels);
}

}  // namespace aclgrad::data
