#include "nn/conv.h"

#include <cmath>

#include "nn/init.h"
#include "ops/conv.h"
#include "ops/shape.h"
#include "tensor/creation.h"

namespace aclgrad::nn {

namespace {

std::string layer_name(const char* base, size_t d) {
  return std::string(base) + std::to_string(d) + "d";
}

template <size_t D>
int64_t product(const ExpandingArray<D>& a) {
  int64_t p = 1;
  for (size_t i = 0; i < D; ++i) p *= a[i];
  return p;
}

template <size_t D>
bool all_equal_to(const ExpandingArray<D>& a, int64_t v) {
  for (size_t i = 0; i < D; ++i)
    if (a[i] != v) return false;
  return true;
}

void check_channels(const std::string& name, int64_t in, int64_t out, int64_t groups) {
  check(groups > 0, name, ": groups must be a positive integer, got ", groups);
  check(in > 0 && out > 0, name, ": in_channels and out_channels must be positive, got ", in,
        " and ", out);
  check(in % groups == 0, name, ": in_channels (", in, ") must be divisible by groups (", groups,
        ")");
  check(out % groups == 0, name, ": out_channels (", out, ") must be divisible by groups (", groups,
        ")");
}

// PyTorch's _ConvNd.reset_parameters: fan_in comes from the weight's dims 1..
void reset_conv(const Tensor& weight, const Tensor& bias, Generator* gen) {
  init::kaiming_uniform_(weight, std::sqrt(5.0), init::FanMode::FanIn, "leaky_relu", gen);
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound, gen);
  }
}

Tensor conv_nd(size_t d, const Tensor& x, const Tensor& w, const Tensor& b,
               const aclgrad::ConvOptions& o) {
  if (d == 1) return conv1d(x, w, b, o);
  if (d == 2) return conv2d(x, w, b, o);
  return conv3d(x, w, b, o);
}

Tensor conv_transpose_nd(size_t d, const Tensor& x, const Tensor& w, const Tensor& b,
                         const aclgrad::ConvTransposeOptions& o) {
  if (d == 1) return conv_transpose1d(x, w, b, o);
  if (d == 2) return conv_transpose2d(x, w, b, o);
  return conv_transpose3d(x, w, b, o);
}

}  // namespace

// ---- ConvNd ----

template <size_t D>
ConvNd<D>::ConvNd(const ConvNdOptions<D>& options)
    : Module(layer_name("Conv", D)), options(options) {
  const std::string& name = type_name();
  check_channels(name, options.in_channels(), options.out_channels(), options.groups());
  const std::string& mode = options.padding_mode();
  check(mode == "zeros" || mode == "reflect" || mode == "replicate", name,
        ": padding_mode must be 'zeros', 'reflect' or 'replicate', got '", mode, "'");
  if (options.padding().mode() == "same") {
    check(all_equal_to(options.stride(), 1), name,
          ": padding='same' is not supported for strided convolutions");
  }
  Shape w{options.out_channels(), options.in_channels() / options.groups()};
  for (size_t i = 0; i < D; ++i) w.push_back(options.kernel_size()[i]);
  weight = register_parameter("weight", empty(w));
  if (options.bias()) bias = register_parameter("bias", empty({options.out_channels()}));
  reset_parameters();
}

template <size_t D>
void ConvNd<D>::reset_parameters(Generator* gen) {
  reset_conv(weight, bias, gen);
}

template <size_t D>
Tensor ConvNd<D>::forward(const Tensor& input) {
  const auto& padding = options.padding();
  aclgrad::ConvOptions o{.stride = options.stride().vec(),
                         .padding = 0,
                         .dilation = options.dilation().vec(),
                         .groups = options.groups()};
  if (options.padding_mode() == "zeros") {
    if (padding.mode().empty())
      o.padding = padding.sizes().vec();
    else
      o.padding = padding.mode();
    return conv_nd(D, input, weight, bias, o);
  }
  // reflect / replicate: pad explicitly (last dim first, left then right), then convolve
  // without padding, as PyTorch does with _reversed_padding_repeated_twice.
  Shape pads;
  for (size_t i = D; i-- > 0;) {
    int64_t left = padding.sizes()[i], right = padding.sizes()[i];
    if (padding.mode() == "valid") left = right = 0;
    if (padding.mode() == "same") {
      const int64_t total = options.dilation()[i] * (options.kernel_size()[i] - 1);
      left = total / 2;
      right = total - left;
    }
    pads.push_back(left);
    pads.push_back(right);
  }
  return conv_nd(D, pad(input, pads, options.padding_mode()), weight, bias, o);
}

template <size_t D>
std::string ConvNd<D>::extra_repr() const {
  using detail::py_tuple;
  std::string s = std::to_string(options.in_channels()) + ", " +
                  std::to_string(options.out_channels()) +
                  ", kernel_size=" + py_tuple(options.kernel_size().vec()) +
                  ", stride=" + py_tuple(options.stride().vec());
  const auto& pad = options.padding();
  if (!pad.mode().empty())
    s += ", padding=" + pad.mode();
  else if (!all_equal_to(pad.sizes(), 0))
    s += ", padding=" + py_tuple(pad.sizes().vec());
  if (!all_equal_to(options.dilation(), 1)) s += ", dilation=" + py_tuple(options.dilation().vec());
  if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
  if (!bias.defined()) s += ", bias=False";
  if (options.padding_mode() != "zeros") s += ", padding_mode=" + options.padding_mode();
  return s;
}

// ---- ConvTransposeNd ----

template <size_t D>
ConvTransposeNd<D>::ConvTransposeNd(const ConvTransposeNdOptions<D>& options)
    : Module(layer_name("ConvTranspose", D)), options(options) {
  check_channels(type_name(), options.in_channels(), options.out_channels(), options.groups());
  Shape w{options.in_channels(), options.out_channels() / options.groups()};
  for (size_t i = 0; i < D; ++i) w.push_back(options.kernel_size()[i]);
  weight = register_parameter("weight", empty(w));
  if (options.bias()) bias = register_parameter("bias", empty({options.out_channels()}));
  reset_parameters();
}

template <size_t D>
void ConvTransposeNd<D>::reset_parameters(Generator* gen) {
  reset_conv(weight, bias, gen);
}

template <size_t D>
Tensor ConvTransposeNd<D>::forward(const Tensor& input) {
  const aclgrad::ConvTransposeOptions o{.stride = options.stride().vec(),
                                        .padding = options.padding().vec(),
                                        .output_padding = options.output_padding().vec(),
                                        .groups = options.groups(),
                                        .dilation = options.dilation().vec()};
  return conv_transpose_nd(D, input, weight, bias, o);
}

template <size_t D>
std::string ConvTransposeNd<D>::extra_repr() const {
  using detail::py_tuple;
  std::string s = std::to_string(options.in_channels()) + ", " +
                  std::to_string(options.out_channels()) +
                  ", kernel_size=" + py_tuple(options.kernel_size().vec()) +
                  ", stride=" + py_tuple(options.stride().vec());
  if (!all_equal_to(options.padding(), 0)) s += ", padding=" + py_tuple(options.padding().vec());
  if (!all_equal_to(options.dilation(), 1)) s += ", dilation=" + py_tuple(options.dilation().vec());
  if (!all_equal_to(options.output_padding(), 0))
    s += ", output_padding=" + py_tuple(options.output_padding().vec());
  if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
  if (!bias.defined()) s += ", bias=False";
  return s;
}

template class ConvNd<1>;
template class ConvNd<2>;
template class ConvNd<3>;
template class ConvTransposeNd<1>;
template class ConvTransposeNd<2>;
template class ConvTransposeNd<3>;

// ---- ConvTBC ----

ConvTBC::ConvTBC(const ConvTBCOptions& options) : Module("ConvTBC"), options(options) {
  check_channels("ConvTBC", options.in_channels(), options.out_channels(), 1);
  check(options.kernel_size() > 0, "ConvTBC: kernel_size must be positive, got ",
        options.kernel_size());
  check(options.padding() >= 0, "ConvTBC: padding must be >= 0, got ", options.padding());
  weight = register_parameter(
      "weight", empty({options.kernel_size(), options.in_channels(), options.out_channels()}));
  bias = register_parameter("bias", empty({options.out_channels()}));
  reset_parameters();
}

void ConvTBC::reset_parameters(Generator* gen) {
  // kaiming_uniform_(a = √5) with the true fan_in C_in·K gives bound 1/√fan_in.
  const double bound =
      1.0 / std::sqrt(static_cast<double>(options.in_channels() * options.kernel_size()));
  init::uniform_(weight, -bound, bound, gen);
  init::uniform_(bias, -bound, bound, gen);
}

Tensor ConvTBC::forward(const Tensor& input) {
  return conv_tbc(input, weight, bias, options.padding());
}

std::string ConvTBC::extra_repr() const {
  return std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
         ", kernel_size=(" + std::to_string(options.kernel_size()) + ",), padding=(" +
         std::to_string(options.padding()) + ",)";
}

}  // namespace aclgrad::nn
