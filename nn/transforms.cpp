// Batch image transforms: normalize, random crop with zero padding, random horizontal flip.
#include "nn/transforms.h"

#include "tensor/creation.h"

namespace aclgrad::data::transforms {

namespace {

// The images as a contiguous [N, C, H, W] tensor, plus whether a batch dim was added.
std::pair<Tensor, bool> as_batch(const Tensor& images, const char* op) {
  check<ShapeError>(images.dim() == 3 || images.dim() == 4, op,
                    ": expected images of shape [N, C, H, W] or [C, H, W], got ", images.sizes());
  check<DtypeError>(images.dtype() == Dtype::Float32 || images.dtype() == Dtype::Float64, op,
                    ": expected float32 or float64 images, got ", images.dtype());
  const bool single = images.dim() == 3;
  return {(single ? images.unsqueeze(0) : images).contiguous(), single};
}

Tensor restore(const Tensor& out, bool single) {
  return single ? out.squeeze(0) : out;
}

template <typename F>
void dispatch(Dtype dtype, F f) {
  if (dtype == Dtype::Float64) {
    f.template operator()<double>();
  } else {
    f.template operator()<float>();
  }
}

}  // namespace

Tensor normalize(const Tensor& images, const std::vector<double>& mean,
                 const std::vector<double>& std) {
  auto [x, single] = as_batch(images, "normalize");
  const int64_t N = x.size(0), C = x.size(1), plane = x.size(2) * x.size(3);
  for (const auto* v : {&mean, &std}) {
    check<ShapeError>(v->size() == 1 || static_cast<int64_t>(v->size()) == C,
                      "normalize: expected 1 or ", C, " values of mean and std for ", C,
                      " channels, got ", mean.size(), " and ", std.size());
  }
  for (double s : std)
    check(s != 0, "normalize: std evaluated to zero, leading to division by zero");
  Tensor out = empty(x.sizes(), x.dtype());
  dispatch(x.dtype(), [&]<typename T>() {
    const T* src = x.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < C; ++c) {
        const T m = static_cast<T>(mean[mean.size() == 1 ? 0 : c]);
        const T s = static_cast<T>(std[std.size() == 1 ? 0 : c]);
        const int64_t base = (n * C + c) * plane;
        for (int64_t i = 0; i < plane; ++i) dst[base + i] = (src[base + i] - m) / s;
      }
    }
  });
  return restore(out, single);
}

Tensor random_crop(const Tensor& images, int64_t size, int64_t padding, Generator& gen) {
  auto [x, single] = as_batch(images, "random_crop");
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  check(size >= 1 && padding >= 0, "random_crop: size must be positive and padding >= 0, got ",
        size, " and ", padding);
  const int64_t Hp = H + 2 * padding, Wp = W + 2 * padding;
  check<ShapeError>(size <= Hp && size <= Wp, "random_crop: crop size ", size,
                    " is larger than the padded image size ", Hp, "x", Wp);
  Tensor out = empty({N, C, size, size}, x.dtype());
  dispatch(x.dtype(), [&]<typename T>() {
    const T* src = x.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    for (int64_t n = 0; n < N; ++n) {
      const int64_t top = static_cast<int64_t>(gen.below(static_cast<uint64_t>(Hp - size + 1)));
      const int64_t left = static_cast<int64_t>(gen.below(static_cast<uint64_t>(Wp - size + 1)));
      for (int64_t c = 0; c < C; ++c) {
        const T* plane = src + (n * C + c) * H * W;
        T* o = dst + (n * C + c) * size * size;
        for (int64_t y = 0; y < size; ++y) {
          const int64_t sy = y + top - padding;  // row in the unpadded image
          for (int64_t xx = 0; xx < size; ++xx) {
            const int64_t sx = xx + left - padding;
            const bool inside = sy >= 0 && sy < H && sx >= 0 && sx < W;
            o[y * size + xx] = inside ? plane[sy * W + sx] : T(0);
          }
        }
      }
    }
  });
  return restore(out, single);
}

Tensor random_horizontal_flip(const Tensor& images, double p, Generator& gen) {
  auto [x, single] = as_batch(images, "random_horizontal_flip");
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  Tensor out = empty(x.sizes(), x.dtype());
  dispatch(x.dtype(), [&]<typename T>() {
    const T* src = x.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    const int64_t per_example = C * H * W;
    for (int64_t n = 0; n < N; ++n) {
      const bool flip = gen.uniform() < p;
      const T* s = src + n * per_example;
      T* d = dst + n * per_example;
      for (int64_t row = 0; row < C * H; ++row) {
        for (int64_t i = 0; i < W; ++i) d[row * W + i] = s[row * W + (flip ? W - 1 - i : i)];
      }
    }
  });
  return restore(out, single);
}

BatchTransform Normalize(std::vector<double> mean, std::vector<double> std) {
  return [mean = std::move(mean), std = std::move(std)](Example batch, Generator&) {
    batch.data = normalize(batch.data, mean, std);
    return batch;
  };
}

BatchTransform RandomCrop(int64_t size, int64_t padding) {
  return [size, padding](Example batch, Generator& gen) {
    batch.data = random_crop(batch.data, size, padding, gen);
    return batch;
  };
}

BatchTransform RandomHorizontalFlip(double p) {
  return [p](Example batch, Generator& gen) {
    batch.data = random_horizontal_flip(batch.data, p, gen);
    return batch;
  };
}

BatchTransform compose(std::vector<BatchTransform> transforms) {
  return [transforms = std::move(transforms)](Example batch, Generator& gen) {
    for (const BatchTransform& t : transforms) batch = t(std::move(batch), gen);
    return batch;
  };
}

}  // namespace aclgrad::data::transforms
