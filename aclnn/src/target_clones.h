// ACLNN_CLONES_AVX512 compiles a function twice (AVX-512 and baseline x86-64) and picks one at load
// time through an ifunc, so the library runs on any x86-64 CPU. ThreadSanitizer instruments the
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
#define ACLNN_CLONES_AVX512
#else
#define ACLNN_CLONES_AVX512 __attribute__((target_clones("avx512f", "default")))
#endif
