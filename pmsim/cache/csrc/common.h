/* Shared definitions of the pmsim C core. Every header of the core includes this one. */
#ifndef PMSIM_COMMON_H
#define PMSIM_COMMON_H
#include <stdint.h>
#include <stddef.h>

/* 64-bit mixer (splitmix64 finaliser): hashing of lines, atoms and images. */
uint64_t pm_mix64(uint64_t x);

/* 64-bit FNV-1a over n 8-byte words (each word folded in whole, as
   pmsim.runtimes.marathe.undo.checksum does): the undo log's record checksum. */
uint64_t pm_fnv1a_words(const uint64_t *words, size_t n);

#endif
