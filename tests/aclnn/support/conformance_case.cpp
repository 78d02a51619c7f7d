#include "support/conformance_case.h"

namespace conformance {

Result BwdCall::Run() const {
  Pool p;
  auto has = [&](const char* name) { return nulls.count(name) == 0; };
  auto t = [&](const char* name, const Spec& s) { return has(name) ? p.Tensor(s) : nullptr; };
  auto ints = [&](const char* name, const Shape& v) { return has(name) ? p.Ints(v) : nullptr; };
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  const aclnnStatus st = aclnnConvolutionBackwardGetWorkspaceSize(
      t("gradOutput", gy), t("input", x), t("weight", w), ints("biasSizes", bias_sizes),
      ints("stride", stride), ints("padding", padding), ints("dilation", dilation), transposed,
      ints("outputPadding", op), groups, has("outputMask") ? p.Bools(mask) : nullptr, cube,
      t("gradInput", gx), t("gradWeight", gw), t("gradBias", gb),
      has("workspaceSize") ? &ws : nullptr, has("executor") ? &ex : nullptr);
  Result r{st, st == 0 ? "" : aclGetRecentErrMsg()};
  if (st == 0) aclDestroyAclOpExecutor(ex);  // never launched
  return r;
}

void BwdCall::SetDtype(aclDataType dt) {
  for (Spec* s : {&gy, &x, &w, &gx, &gw, &gb}) s->dt = dt;
}

BwdCall Bwd1d() {
  BwdCall c;
  c.gy = {{2, 4, 5}};
  c.x = c.gx = {{2, 3, 7}};
  c.w = c.gw = {{4, 3, 3}};
  c.stride = c.dilation = {1};
  c.padding = c.op = {0};
  return c;
}

BwdCall Bwd3d() {
  BwdCall c;
  c.gy = {{1, 4, 3, 3, 3}};
  c.x = c.gx = {{1, 3, 5, 5, 5}};
  c.w = c.gw = {{4, 3, 3, 3, 3}};
  c.stride = c.dilation = {1, 1, 1};
  c.padding = c.op = {0, 0, 0};
  return c;
}

BwdCall BwdTransposed2d() {
  BwdCall c;
  c.transposed = true;
  c.x = c.gx = {{2, 4, 5, 5}};
  c.w = c.gw = {{4, 3, 3, 3}};
  c.gy = {{2, 3, 12, 12}};  // (5 - 1) * 2 + (3 - 1) + 1 + 1
  c.gb = {{3}};
  c.bias_sizes = {3};
  c.stride = {2, 2};
  c.op = {1, 1};
  return c;
}

namespace {
int64_t RegularOut(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}
int64_t TransposedOut(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in - 1) * s - 2 * p + d * (k - 1) + 1;
}
BwdCall Plain(bool transposed, int64_t h, int64_t w_in, int64_t kh, int64_t kw, Shape stride,
              Shape padding, Shape dilation) {
  BwdCall c;
  c.transposed = transposed;
  c.x = c.gx = {{1, 1, h, w_in}};
  c.w = c.gw = {{1, 1, kh, kw}};
  auto out = transposed ? TransposedOut : RegularOut;
  c.gy = {{1, 1, out(h, kh, stride[0], padding[0], dilation[0]),
           out(w_in, kw, stride[1], padding[1], dilation[1])}};
  c.gb = {{1}};
  c.bias_sizes = {1};
  c.stride = stride;
  c.padding = padding;
  c.dilation = dilation;
  return c;
}
}  // namespace

BwdCall BwdPlain2d(int64_t h, int64_t w_in, int64_t kh, int64_t kw, Shape stride, Shape padding,
                   Shape dilation) {
  return Plain(false, h, w_in, kh, kw, stride, padding, dilation);
}

BwdCall BwdPlainTransposed2d(int64_t h, int64_t w_in, int64_t kh, int64_t kw, Shape stride,
                             Shape padding, Shape dilation) {
  return Plain(true, h, w_in, kh, kw, stride, padding, dilation);
}

Result TbcCall::Run() const {
  Pool p;
  auto t = [&](const char* name, const Spec& s) {
    return nulls.count(name) ? nullptr : p.Tensor(s);
  };
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  const aclnnStatus st = aclnnConvTbcBackwardGetWorkspaceSize(
      t("self", self), t("input", x), t("weight", w), t("bias", b), pad, cube, t("gradInput", gx),
      t("gradWeight", gw), t("gradBias", gb), nulls.count("workspaceSize") ? nullptr : &ws,
      nulls.count("executor") ? nullptr : &ex);
  Result r{st, st == 0 ? "" : aclGetRecentErrMsg()};
  if (st == 0) aclDestroyAclOpExecutor(ex);
  return r;
}

void TbcCall::SetDtype(aclDataType dt) {
  for (Spec* s : {&self, &x, &w, &b, &gx, &gw, &gb}) s->dt = dt;
}

}  // namespace conformance
