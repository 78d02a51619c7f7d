// ASAN_POISON_MEMORY_REGION / ASAN_UNPOISON_MEMORY_REGION: the sanitizer's when libaclnn is built
// with -fsanitize=address (gcc or clang), no-ops otherwise.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define ACLNN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ACLNN_ASAN 1
#endif
#endif

#ifdef ACLNN_ASAN
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#endif
