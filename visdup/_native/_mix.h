/* The 64-bit mixer the kernels hash structure with: a subtree's identity (_ted.c), the
 * pieces of a layout walk (_dom.c). */
#ifndef VISDUP_MIX_H
#define VISDUP_MIX_H

#include <stdint.h>

/* SplitMix64's finaliser: a bijection in which every bit of the word reaches every bit of
 * the hash, so words that differ in one bit hash far apart. */
static inline uint64_t
mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

#endif
