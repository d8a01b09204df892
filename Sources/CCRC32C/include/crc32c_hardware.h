// CRC-32C with the processor's own instruction (SSE 4.2 `crc32` on x86-64), for Journal's CRC32C:
// Swift has no way to reach it without a C shim. The state is the raw register, no pre- or
// post-inversion, as in CRC32C.update's table loop.
#ifndef OPQ_CRC32C_HARDWARE_H
#define OPQ_CRC32C_HARDWARE_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this processor has the instruction (checked once by the caller), else 0.
int opq_crc32c_hardware_available(void);

/// The CRC-32C register after `count` bytes at `bytes`, from `state`. Only when available.
uint32_t opq_crc32c_hardware_update(uint32_t state, const void *bytes, size_t count);

#endif
