#include "common.h"

uint64_t pm_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t pm_fnv1a_words(const uint64_t *words, size_t n)
{
    uint64_t h = UINT64_C(0xCBF29CE484222325);
    for (size_t i = 0; i < n; i++)
        h = (h ^ words[i]) * UINT64_C(0x100000001B3);
    return h;
}
