#include "tensor/bulk16.h"

#include <atomic>

#include "tensor/error.h"

namespace aclgrad {

namespace {

// The installed conversions: null until ops/ installs its own (kept for the process).
std::atomic<const Bulk16Converters*> g_installed{nullptr};

const Bulk16Converters* installed() {
  return g_installed.load(std::memory_order_acquire);
}

}  // namespace

void install_bulk16_converters(const Bulk16Converters& c) {
  check(c.widen_half && c.widen_bf16 && c.narrow_half && c.narrow_bf16,
        "install_bulk16_converters: every conversion must be set");
  g_installed.store(new Bulk16Converters(c), std::memory_order_release);
}

const Bulk16Converters& bulk16_converters() {
  static const Bulk16Converters kNone;
  const Bulk16Converters* c = installed();
  return c ? *c : kNone;
}

void widen16(const Half* src, float* dst, int64_t n) {
  if (const Bulk16Converters* c = installed()) return c->widen_half(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}
void widen16(const BFloat16* src, float* dst, int64_t n) {
  if (const Bulk16Converters* c = installed()) return c->widen_bf16(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}
void narrow16(const float* src, Half* dst, int64_t n) {
  if (const Bulk16Converters* c = installed()) return c->narrow_half(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = Half(src[i]);
}
void narrow16(const float* src, BFloat16* dst, int64_t n) {
  if (const Bulk16Converters* c = installed()) return c->narrow_bf16(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = BFloat16(src[i]);
}

}  // namespace aclgrad
