#ifndef CMALLOC_SHIM_H
#define CMALLOC_SHIM_H
#include <stddef.h>
#include <malloc.h>

// The bytes malloc has handed out and not had back, in every arena and in its own mappings:
// glibc's mallinfo2 (Swift's Glibc module leaves malloc.h out, and with it malloc_trim).
static inline size_t CMalloc_allocatedBytes(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}
#endif
