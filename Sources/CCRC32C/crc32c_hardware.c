#include "crc32c_hardware.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>

int opq_crc32c_hardware_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

// Compiled for SSE 4.2 alone (the rest of the build stays baseline x86-64): only called when available.
__attribute__((target("sse4.2")))
uint32_t opq_crc32c_hardware_update(uint32_t state, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    uint64_t crc = state;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = _mm_crc32_u64(crc, word);
        p += 8;
        count -= 8;
    }
    uint32_t crc32 = (uint32_t)crc;
    while (count > 0) {
        crc32 = _mm_crc32_u8(crc32, *p);
        p += 1;
        count -= 1;
    }
    return crc32;
}

#else

int opq_crc32c_hardware_available(void) { return 0; }

uint32_t opq_crc32c_hardware_update(uint32_t state, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return state;  // never called: not available
}

#endif
