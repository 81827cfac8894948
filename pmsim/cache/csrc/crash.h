/* Crash-state hot paths: the bounds sweep over a trace, odometer enumeration and walks over
 * crash states (updating a caller-owned image and its two multiset hashes in place), and image
 * hashing. Every entry point has a pure-Python reference in crashfuzz (model.py, states.py).
 * Arrays are owned by the caller; sizes are checked and errors returned as negative values. */
#ifndef PMSIM_CRASH_H
#define PMSIM_CRASH_H
#include "common.h"

/* Per-trace store tables, chain-major: chain c's stores are rows off[c] .. off[c+1]-1 in trace
 * order. word: image word written; val: value; old: the word's previous value in its chain;
 * d1/d2: hash deltas (terms(word, val) - terms(word, old)). */
typedef struct {
    const int64_t *off;
    const int64_t *word;
    const uint64_t *val;
    const uint64_t *old;
    const uint64_t *d1;
    const uint64_t *d2;
    int64_t nchains;
    int64_t nstores;
    int64_t nwords;
} crash_tables;

/* 0 when the tables are consistent (offsets monotone, words inside the image), else -1. */
int crash_tables_check(const crash_tables *t);

/* Lower-bound sweep (domain: 0 PDOM-0, 1 PDOM-1, 2 PDOM-2). Per event: kind, tid, drained (1
 * for a non-temporal store that left the write-combining buffer where it sits, 2 for one
 * persistent where it sits in every domain, a device write acknowledged by the media; 0 else),
 * chain of a store (-1 otherwise), frow = row of a flushed line in line_table (nrows x 8 chain
 * ids, -1 padded; -1 when the line has no stores). Covered at once: a CLFLUSH's line (PDOM-0/1),
 * a drained NT store, every other store but an issued NT store (PDOM-2); covered at the
 * thread's next fence: a CLWB / CLFLUSHOPT's line (PDOM-0/1), an issued NT store. Covered
 * means persistent in PDOM-1/2 and accepted in PDOM-0, where a fence after a PCOMMIT of its
 * thread makes what was accepted before the PCOMMIT persistent. Writes the change log (k,
 * chain, lo): from point k on, lo[chain] >= lo. Returns the number of entries, -1 on bad
 * input, -2 when cap is too small, -3 when out of memory. */
int64_t crash_sweep(const uint8_t *kind, const uint16_t *tid, const uint8_t *drained,
                    const int64_t *chain, const int64_t *frow, const int64_t *line_table,
                    int64_t nrows, int64_t n, int64_t nchains, int64_t nthreads, int domain,
                    int64_t *out_k, int64_t *out_chain, int64_t *out_lo, int64_t cap);

/* Odometer over nfree chains (fchain: chain ids). Chain i takes the prefix lengths
 * reps[rep_off[i] .. rep_off[i+1]-1] (ascending); digit[i] indexes them, digit 0 is the least
 * significant. img and hash[2] must hold the current state. Repeats count times: advance one
 * state, update img and hash in place, and write the hash to out_hash[2*s] (if not NULL).
 * Advancing past the last state wraps to the first. Returns count, or -1 on bad input. */
int64_t crash_odometer(const crash_tables *t, int64_t nfree, const int64_t *fchain,
                       const int64_t *rep_off, const int64_t *reps, int64_t *digit,
                       uint64_t *img, uint64_t *hash, int64_t count, uint64_t *out_hash);

/* Walk through count target states (targets: count x nfree prefix lengths) starting from x
 * (nfree prefix lengths, updated), updating img and hash in place; out_hash[2*s] (if not NULL)
 * receives the hash of target s. Returns count, or -1 on bad input (img then holds a valid
 * earlier state of the walk and x says which). */
int64_t crash_walk(const crash_tables *t, int64_t nfree, const int64_t *fchain, int64_t *x,
                   const int64_t *targets, int64_t count, uint64_t *img, uint64_t *hash,
                   uint64_t *out_hash);

/* The two multiset hashes of an image of n words (word i has index i). */
void crash_hash_words(const uint64_t *words, int64_t n, uint64_t *out);

#endif
