/* Shared definitions of the pmsim C core. Every header of the core includes this one. */
#ifndef PMSIM_COMMON_H
#define PMSIM_COMMON_H
#include <stdint.h>
#include <stddef.h>

/* 64-bit mixer (splitmix64 finaliser): hashing of lines, atoms and images. */
uint64_t pm_mix64(uint64_t x);

#endif
