// ACLNN_CLONES_SIMD compiles a function three times (AVX-512, AVX2 and baseline x86-64) and picks
// one at load time through an ifunc, by the CPU alone (ACLNN_CPU_MAX_ISA does not reach it), so
// the library runs on any x86-64 CPU. ThreadSanitizer instruments the
// ifunc's resolver, which runs during relocation before TSan's runtime is up, and the process dies
// at start; TSan builds therefore compile the baseline only.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define ACLNN_TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ACLNN_TSAN_BUILD 1
#endif
#endif

#ifdef ACLNN_TSAN_BUILD
#define ACLNN_CLONES_SIMD
#else
#define ACLNN_CLONES_SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
