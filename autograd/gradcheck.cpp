#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/error.h"
#include "autograd/grad_mode.h"
#include "tensor/creation.h"
#include "tensor/random.h"

namespace aclgrad::autograd {

namespace {

// J[r][c] = d output[r] / d input[c], row-major (rows = output elements).
struct Jacobian {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Jacobian(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& at(int64_t r, int64_t c) { return v[static_cast<size_t>(r * cols + c)]; }
};

Shape unravel(int64_t k, const Shape& sizes) {
  Shape idx(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = sizes[d] == 0 ? 0 : k % sizes[d];
    k = sizes[d] == 0 ? 0 : k / sizes[d];
  }
  return idx;
}

struct Failure {
  std::string message;
};

struct Checker {
  const char* api;
  const GradcheckFn& fn;
  const tensor_list& inputs;
  const GradcheckOptions& opt;
  std::vector<size_t> vars;  // indices of inputs that require grad

  // Floating outputs of fn as float64 values (others are not checked).
  std::vector<std::vector<double>> evaluate() const {
    std::vector<std::vector<double>> out;
    for (const Tensor& t : fn(inputs)) {
      out.push_back(t.defined() && t.is_floating_point() ? t.to_vector<double>()
                                                         : std::vector<double>());
    }
    return out;
  }

  // Central differences, one input element at a time, perturbed in place and restored.
  std::vector<std::vector<Jacobian>> numerical(const tensor_list& outs) const {
    std::vector<std::vector<Jacobian>> jac(outs.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      for (size_t j : vars) {
        jac[i].emplace_back(outs[i].defined() && outs[i].is_floating_point() ? outs[i].numel() : 0,
                            inputs[j].numel());
      }
    }
    for (size_t jj = 0; jj < vars.size(); ++jj) {
      const Tensor& x = inputs[vars[jj]];
      for (int64_t c = 0; c < x.numel(); ++c) {
        double& e = x.at<double>(unravel(c, x.sizes()));
        const double orig = e;
        e = orig + opt.eps;
        const auto plus = evaluate();
        e = orig - opt.eps;
        const auto minus = evaluate();
        e = orig;
        for (size_t i = 0; i < outs.size(); ++i) {
          for (int64_t r = 0; r < jac[i][jj].rows; ++r) {
            jac[i][jj].at(r, c) = (plus[i][r] - minus[i][r]) / (2 * opt.eps);
          }
        }
      }
    }
    return jac;
  }

  tensor_list var_tensors() const {
    tensor_list v;
    for (size_t j : vars) v.push_back(inputs[j]);
    return v;
  }

  // One backward per output element; each run twice for the reentrancy check.
  std::vector<std::vector<Jacobian>> analytical(const tensor_list& outs) const {
    std::vector<std::vector<Jacobian>> jac(outs.size());
    const tensor_list xs = var_tensors();
    for (size_t i = 0; i < outs.size(); ++i) {
      const Tensor& y = outs[i];
      const bool floating = y.defined() && y.is_floating_point();
      for (size_t jj = 0; jj < vars.size(); ++jj) {
        jac[i].emplace_back(floating ? y.numel() : 0, xs[jj].numel());
      }
      if (!floating || !y.requires_grad()) continue;
      for (int64_t r = 0; r < y.numel(); ++r) {
        std::vector<double> onehot(static_cast<size_t>(y.numel()), 0.0);
        onehot[r] = 1;
        const Tensor go = from_vector(onehot, y.sizes(), y.dtype());
        const tensor_list g1 = grad({y}, xs, {go}, true, false, true);
        const tensor_list g2 = grad({y}, xs, {go}, true, false, true);
        for (size_t jj = 0; jj < xs.size(); ++jj) {
          if (!g1[jj].defined()) continue;
          const std::vector<double> a = g1[jj].to_vector<double>();
          const std::vector<double> b =
              g2[jj].defined() ? g2[jj].to_vector<double>() : std::vector<double>(a.size(), 0.0);
          for (int64_t c = 0; c < xs[jj].numel(); ++c) {
            if (!(std::abs(a[c] - b[c]) <= opt.nondet_tol)) {
              std::ostringstream os;
              os << api << ": backward is not reentrant: running it twice with the same "
                 << "grad_output gave " << a[c] << " and then " << b[c] << " for output " << i
                 << ", input " << vars[jj] << " at output index "
                 << format_shape(unravel(r, y.sizes())) << ", input index "
                 << format_shape(unravel(c, xs[jj].sizes())) << " (nondet_tol " << opt.nondet_tol
                 << ")";
              throw Failure{os.str()};
            }
            jac[i][jj].at(r, c) = a[c];
          }
        }
      }
    }
    return jac;
  }

  void compare(const tensor_list& outs, const std::vector<std::vector<Jacobian>>& num,
               const std::vector<std::vector<Jacobian>>& ana) const {
    for (size_t i = 0; i < outs.size(); ++i) {
      for (size_t jj = 0; jj < vars.size(); ++jj) {
        const Jacobian& n = num[i][jj];
        const Jacobian& a = ana[i][jj];
        double worst = 0;
        int64_t wr = -1, wc = -1;
        for (int64_t r = 0; r < n.rows; ++r) {
          for (int64_t c = 0; c < n.cols; ++c) {
            const double nv = n.v[r * n.cols + c], av = a.v[r * a.cols + c];
            const double excess = std::abs(av - nv) - (opt.atol + opt.rtol * std::abs(nv));
            const bool bad = !(excess <= 0);  // NaN on either side fails
            if (bad && (wr < 0 || !(excess <= worst))) {
              worst = std::isnan(excess) ? INFINITY : excess;
              wr = r;
              wc = c;
            }
          }
        }
        if (wr < 0) continue;
        const double nv = n.v[wr * n.cols + wc], av = a.v[wr * a.cols + wc];
        std::ostringstream os;
        os.precision(10);
        os << api << ": Jacobian mismatch for output " << i << " with respect to input " << vars[jj]
           << ": worst element at output index " << format_shape(unravel(wr, outs[i].sizes()))
           << ", input index " << format_shape(unravel(wc, inputs[vars[jj]].sizes()))
           << ": numerical " << nv << " vs analytical " << av << " (|difference| "
           << std::abs(av - nv) << " > atol " << opt.atol << " + rtol " << opt.rtol
           << " * |numerical|)";
        throw Failure{os.str()};
      }
    }
  }

  void check_zero_grad_output(const tensor_list& outs) const {
    tensor_list ys, gos;
    for (const Tensor& y : outs) {
      if (y.defined() && y.is_floating_point() && y.requires_grad()) {
        ys.push_back(y);
        gos.push_back(zeros(y.sizes(), y.dtype()));
      }
    }
    if (ys.empty()) return;
    const tensor_list g = grad(ys, var_tensors(), gos, true, false, true);
    for (size_t jj = 0; jj < g.size(); ++jj) {
      if (!g[jj].defined()) continue;
      const std::vector<double> v = g[jj].to_vector<double>();
      for (size_t c = 0; c < v.size(); ++c) {
        if (v[c] != 0) {
          std::ostringstream os;
          os << api << ": backward is not multiplied by grad_output: a zero grad_output gave "
             << v[c] << " for input " << vars[jj] << " at index "
             << format_shape(unravel(static_cast<int64_t>(c), inputs[vars[jj]].sizes()));
          throw Failure{os.str()};
        }
      }
    }
  }
};

bool run_check(const char* api, const GradcheckFn& fn, const tensor_list& inputs,
               const GradcheckOptions& opt) {
  Checker ck{api, fn, inputs, opt, {}};
  for (size_t j = 0; j < inputs.size(); ++j) {
    const Tensor& x = inputs[j];
    if (!x.defined() || !x.requires_grad()) continue;
    check<DtypeError>(x.dtype() == Dtype::Float64, api, ": input ", j, " requires grad but is ",
                      x.dtype(), "; finite differences need float64 inputs");
    for (int64_t d = 0; d < x.dim(); ++d) {
      check(x.size(d) <= 1 || x.stride(d) != 0, api, ": input ", j, " of shape ", x.sizes(),
            " has overlapping (stride 0) elements; pass a contiguous copy");
    }
    ck.vars.push_back(j);
  }
  check(!ck.vars.empty(), api, ": no input requires grad");
  try {
    const auto num = ck.numerical(fn(inputs));
    const tensor_list outs = fn(inputs);
    ck.compare(outs, num, ck.analytical(outs));
    if (opt.check_zero_grad_output) ck.check_zero_grad_output(outs);
  } catch (const Failure& f) {
    check<AutogradError>(!opt.raise_exception, f.message);
    return false;
  }
  return true;
}

}  // namespace

bool gradcheck_impl(const GradcheckFn& fn, const tensor_list& inputs,
                    const GradcheckOptions& options) {
  return run_check("gradcheck", fn, inputs, options);
}

bool gradgradcheck_impl(const GradcheckFn& fn, const tensor_list& inputs,
                        const tensor_list& grad_outputs, const GradcheckOptions& options) {
  tensor_list outs = fn(inputs);
  std::vector<size_t> diff_outs;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].defined() && outs[i].is_floating_point() && outs[i].requires_grad())
      diff_outs.push_back(i);
  }
  check(!diff_outs.empty(), "gradgradcheck: no output requires grad");
  tensor_list gos = grad_outputs;
  if (gos.empty()) {
    Generator gen(20240601);
    for (size_t i : diff_outs) gos.push_back(randn(outs[i].sizes(), Dtype::Float64, &gen));
  }
  check(gos.size() == diff_outs.size(), "gradgradcheck: got ", gos.size(), " grad_outputs for ",
        diff_outs.size(), " differentiable outputs");
  for (Tensor& g : gos) {
    if (!g.requires_grad()) g = g.detach().requires_grad_();
  }
  const size_t n = inputs.size();
  tensor_list vars;
  for (const Tensor& x : inputs) {
    if (x.defined() && x.requires_grad()) vars.push_back(x);
  }
  // The first-order gradients as a function of (inputs, grad_outputs), recorded so that their
  // own backward can be checked.
  GradcheckFn first_order = [&fn, n, diff_outs, vars](const tensor_list& all) {
    const tensor_list in(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    const tensor_list out = fn(in);
    tensor_list ys, gs;
    for (size_t k = 0; k < diff_outs.size(); ++k) {
      ys.push_back(out[diff_outs[k]]);
      gs.push_back(all[n + k]);
    }
    tensor_list g = grad(ys, vars, gs, true, true, true);
    for (size_t j = 0; j < g.size(); ++j) {
      if (!g[j].defined()) g[j] = zeros(vars[j].sizes(), vars[j].dtype());
    }
    return g;
  };
  tensor_list all = inputs;
  all.insert(all.end(), gos.begin(), gos.end());
  return run_check("gradgradcheck", first_order, all, options);
}

}  // namespace aclgrad::autograd
