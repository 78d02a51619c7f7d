// ACLGRAD_SIMD_CLONES compiles a function three times (AVX-512, AVX2 and baseline x86-64) and
// picks one at load time through an ifunc, by the CPU alone, so the library runs on any x86-64
// CPU and vectorises wider where it can (libaclnn does the same: aclnn/src/target_clones.h).
// Put it on a plain (non-template) function that wraps the hot loop; inline templates it calls
// are compiled into each clone. None of the targets enables FMA, so no clone contracts a * b + c
// and every clone rounds exactly as the baseline does. ThreadSanitizer instruments the ifunc's
// resolver, which runs before TSan's runtime is up, so TSan builds compile the baseline only.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define ACLGRAD_TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ACLGRAD_TSAN_BUILD 1
#endif
#endif

#ifdef ACLGRAD_TSAN_BUILD
#define ACLGRAD_SIMD_CLONES
#else
#define ACLGRAD_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
