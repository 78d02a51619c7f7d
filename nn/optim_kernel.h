// Internal to the optimizers and schedulers: the in-place element loop shared by SGD and Adam,
// and the number format of state_dict metadata.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>

#include "tensor/iter.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace aclgrad::optim::detail {

/// Shortest decimal that parses back to exactly v (std::to_chars).
std::string format_double(double v);
/// Parses a whole string written by format_double; Error naming key otherwise.
double parse_double(const std::string& s, const std::string& key);
/// The value of key in metadata; Error "load_state_dict: metadata has no '<key>'" otherwise.
const std::string& lookup(const std::map<std::string, std::string>& metadata,
                          const std::string& key);

/// x[i] = sqrt(x[i]) for i < n. std::sqrt keeps its errno path (a branch) under the default
/// -fmath-errno, which stops GCC from vectorising any loop containing it; SSE2's sqrtps/sqrtpd
/// are the same correctly rounded IEEE square root, 4 or 2 at a time.
template <typename T>
inline void sqrt_in_place(T* x, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(x + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
  } else if constexpr (std::is_same_v<T, double>) {
    for (; i + 2 <= n; i += 2) _mm_storeu_pd(x + i, _mm_sqrt_pd(_mm_loadu_pd(x + i)));
  }
#endif
  for (; i < n; ++i) x[i] = std::sqrt(x[i]);
}

/// Calls f(T& p, T g, T&... s) for every element of param, with grad and each state tensor at the
/// same index (all have param's shape and dtype T). Goes through for_each_strided, so any strides
/// work; contiguous runs take a plain loop the compiler vectorises. param and the state tensors
/// are written in place; the caller bumps their versions. Large parameters are split over threads
/// (Parallel::Yes): f must touch only the elements it is given.
template <typename T, typename F, typename... S>
void for_each_param_element(const Tensor& param, const Tensor& grad, F f, const S&... state) {
  constexpr size_t K = sizeof...(S);
  for_each_strided(
      param, {grad, state...},
      [&](int64_t n, char* out, const char* const* in, const int64_t* st) {
        [&]<size_t... I>(std::index_sequence<I...>) {
          // State tensors are inputs of the iteration but are written: they are our
          // own (non-const) buffers.
          char* s[K > 0 ? K : 1] = {const_cast<char*>(in[1 + I])...};
          (void)s;
          constexpr int64_t es = sizeof(T);
          // A local copy of the body: its captured scalars cannot alias the
          // buffers, so they stay in registers and the loop vectorises.
          F fn = f;
          if (st[0] == es && st[1] == es && ((st[2 + I] == es) && ...)) {
            T* p = reinterpret_cast<T*>(out);
            const T* g = reinterpret_cast<const T*>(in[0]);
            for (int64_t i = 0; i < n; ++i) {
              fn(p[i], g[i], reinterpret_cast<T*>(s[I])[i]...);
            }
          } else {
            for (int64_t i = 0; i < n; ++i) {
              fn(*reinterpret_cast<T*>(out + i * st[0]),
                 *reinterpret_cast<const T*>(in[0] + i * st[1]),
                 *reinterpret_cast<T*>(s[I] + i * st[2 + I])...);
            }
          }
        }
        (std::make_index_sequence<K>{});
      },
      Parallel::Yes);
}

}  // namespace aclgrad::optim::detail
