/* The machine engine: the C twin of pmsim/hw/engines/reference.py's PyEngine (timed) and
   FunctionalEngine (untimed).

   Caches (per-core L1 and L2, shared LLC; write-back, LRU by per-cache stamps), coherence,
   the WPQ ring and media banks, the persistence trace and per-thread statistics. Every rule,
   and the order of every floating-point operation, mirrors the reference engine so that both
   produce identical statistics and traces. The functional memory is the caller's: one array of
   8-byte words per region (the NumPy arrays of reference.Memory), reached through pointers.

   With pm_config.timed == 0 the engine is functional: memory, loaded values, CAS results,
   instruction counts and the trace's stores, flushes, fences, pcommits and markers are those of
   the timed engine, but caches, coherence, the WPQ and clocks are not simulated (no WB events,
   no latency statistics; clocks move only by pm_set_clock). Crash recovery needs only this.

   Hardware transactions (pm_xbegin .. pm_rdtsc) follow pmsim/hw/htm.py: per-line read and
   write sets, eager requester-wins conflicts with every other thread's accesses, capacity from
   the L1 geometry and the configured bounds, buffered stores applied at commit. They work the
   same in both modes (only their costs are timed).

   Instruction entry points return 0, or an error code (PM_ERR_*) and leave the machine as it
   was; pm_load/pm_cas/pm_xchg/pm_rdtsc return the value and report errors through pm_error(). */
#ifndef PMSIM_MACHINE_H
#define PMSIM_MACHINE_H
#include "common.h"

/* error codes */
enum {
    PM_ERR_ADDR = 1,   /* unaligned, or outside every region */
    PM_ERR_TID = 2,    /* thread id out of range */
    PM_ERR_OP = 3,     /* unknown batch op code */
    PM_ERR_NOMEM = 4,  /* the trace could not grow */
    PM_ERR_VALUE = 5,  /* pm_work: ns negative, not finite or above PM_MAX_WORK_NS; pm_xabort:
                          a code above 255 */
    PM_ERR_HTM = 6     /* pm_xbegin inside a transaction, pm_xend outside one */
};

typedef struct pm_config {
    int cores;
    uint32_t l1_sets, l1_ways, l2_sets, l2_ways, llc_sets, llc_ways;
    double l1_ns, l2_ns, llc_ns;
    double pm_read_ns, pm_write_ns, to_wpq_ns;
    uint32_t banks, wpq_entries;
    int merge_writes;    /* 1: a write to a line still queued merges into it */
    double dram_ns;
    double store_ns, flush_ns, fence_ns, rmw_ns, pcommit_ns, snoop_ns;
    int domain;          /* 0, 1 or 2 (PDOM-n) */
    int fixed_barrier;   /* 1: persist barriers cost barrier_ns */
    double barrier_ns;
    uint32_t nregions;   /* regions sorted by base */
    uint32_t pm_index;   /* which of them is the traced PM region */
    int timed;           /* 1: timed (caches, WPQ, clocks); 0: functional */
    /* hardware transactional memory (pmsim.config.HTMConfig) */
    uint32_t htm_read_lines, htm_write_lines;
    int htm_any_flush;   /* 1: any flush inside a transaction aborts it */
    double xbegin_ns, xend_ns, xabort_ns, rdtsc_ns, tsc_ghz;
    double tsc_skew[64]; /* per-core TSC offsets (ns) */
    /* the core (pmsim.config.CoreConfig): 1 = out of order (store buffer, overlapped misses) */
    int ooo;
    uint32_t sb_entries, lf_entries;
    double load_issue_ns;
    /* prefetchers (PrefetchConfig) */
    int pf_stream, pf_adjacent;
    uint32_t pf_distance, pf_degree, pf_streams;
    /* the DIMM model (DIMMConfig); dimms == 0: the bank model */
    uint32_t dimms, il_shift, xpb_lines;
    double media_read_ns, media_read_occ_ns, media_write_ns;
    int read_priority;   /* 1: reads book a calendar of their own (see dimm_read) */
    /* write and read streams' contention (DIMMConfig.combine_writers, contention,
       read_contention, contention_window_ns): a chance of 0 turns it off */
    uint32_t combine_writers;
    double contention, read_contention, contention_window_ns;
    uint64_t seed;       /* MachineConfig.seed: the buffers' replacement generators */
    /* Hyper-Threading (CoreConfig.placement): each thread's physical core and the other
       thread on it (-1: none); ncaches physical cores; smt_speed for a thread beside one */
    uint32_t ncaches;
    int32_t core_of[64], sib[64];
    double smt_speed;
} pm_config;

/* One record of the persistence trace (TRACE_DTYPE). */
typedef struct pm_event {
    uint8_t kind;
    uint8_t pad;
    uint16_t tid;
    uint32_t aux;
    uint64_t addr;
    uint64_t value;
    double time;
} pm_event;

/* One operation of a batch (BATCH_DTYPE). */
typedef struct pm_op {
    uint8_t op;
    uint8_t pad;
    uint16_t tid;
    uint32_t aux;
    uint64_t addr;
    uint64_t value;
    uint64_t arg;
} pm_op;

/* Per-thread statistics (STATS_DTYPE); time_ns holds the thread's clock. */
typedef struct pm_stats {
    uint64_t loads, stores, ntstores, rmws;
    uint64_t l1_hits, l1_misses, l2_hits, l2_misses, llc_hits, llc_misses;
    uint64_t snoops, writebacks;
    uint64_t clflush, clflushopt, clwb, sfence, mfence, pcommit, persist_barriers;
    uint64_t wpq_inserts, wpq_occ_sum, wpq_occ_max, wpq_merged;
    uint64_t pm_read_bytes, pm_write_bytes, dram_read_bytes, dram_write_bytes;
    uint64_t htm_begins, htm_commits, htm_aborts_conflict, htm_aborts_capacity;
    uint64_t htm_aborts_explicit, htm_aborts_flush, htm_aborts_lock, htm_false_sharing;
    uint64_t pf_issued, pf_useful, pf_late, xpb_hits, xpb_misses, xpb_rmw;
    uint64_t media_read_bytes, media_write_bytes;
    double wpq_stall_ns, sb_stall_ns, barrier_stall_ns, work_ns, time_ns;
} pm_stats;

typedef struct pm_machine pm_machine;

/* A machine over the caller's region arrays (bases[i], sizes[i] in bytes, words[i] the
   region's 8-byte words); NULL when out of memory. */
pm_machine *pm_machine_new(const pm_config *cfg, const uint64_t *bases, const uint64_t *sizes,
                           uint64_t **words);
void pm_machine_free(pm_machine *m);
/* Power cycle: empty caches and WPQ, zero clocks, stats, trace and non-PM regions. */
void pm_reset_volatile(pm_machine *m);

/* The error code of the last failed pm_load/pm_cas/pm_xchg (0 if it succeeded). */
int pm_error(const pm_machine *m);

uint64_t pm_load(pm_machine *m, int tid, uint64_t addr);
/* Independent loads (PyEngine.load_many): out[i] = the word at addrs[i]. Every address and
   the thread are checked first: on an error nothing has run. */
int pm_load_many(pm_machine *m, int tid, const uint64_t *addrs, size_t n, uint64_t *out);
/* pm_load_many of the n consecutive words from addr (PyEngine.load_words). */
int pm_load_words(pm_machine *m, int tid, uint64_t addr, size_t n, uint64_t *out);
/* PyEngine.run_ahead: the misses of pm_load_many, timed, with no values, no loads counted and
   no transactional tracking; nothing on the in-order core or in functional mode. */
int pm_run_ahead(pm_machine *m, int tid, const uint64_t *addrs, size_t n);
int pm_store(pm_machine *m, int tid, uint64_t addr, uint64_t value);
/* Stores of vals[0..n) to consecutive words from addr, in order (PyEngine.store_words): one
   call for what n pm_store calls do. On an error *done is the index of the failing store and
   the stores before it have run. */
int pm_store_words(pm_machine *m, int tid, uint64_t addr, const uint64_t *vals, size_t n,
                   size_t *done);
/* clwb of addrs[0..n) in order (PyEngine.clwb_many); *done as for pm_store_words. */
int pm_clwb_many(pm_machine *m, int tid, const uint64_t *addrs, size_t n, size_t *done);
int pm_ntstore(pm_machine *m, int tid, uint64_t addr, uint64_t value);
/* A device write (Proteus/ATOM memory controller): PM and trace only; PM addresses only. */
int pm_devwrite(pm_machine *m, int tid, uint64_t addr, uint64_t value, uint32_t drained);
int pm_clflush(pm_machine *m, int tid, uint64_t addr);
int pm_clflushopt(pm_machine *m, int tid, uint64_t addr);
int pm_clwb(pm_machine *m, int tid, uint64_t addr);
int pm_sfence(pm_machine *m, int tid);
int pm_mfence(pm_machine *m, int tid);
int pm_pcommit(pm_machine *m, int tid);
uint64_t pm_cas(pm_machine *m, int tid, uint64_t addr, uint64_t expected, uint64_t value);
uint64_t pm_xchg(pm_machine *m, int tid, uint64_t addr, uint64_t value);
/* ns in [0, 1e12] (reference.MAX_WORK_NS), else PM_ERR_VALUE and no change. */
int pm_work(pm_machine *m, int tid, double ns);
int pm_mark(pm_machine *m, int tid, uint32_t code, uint64_t value);
int pm_persist_barrier(pm_machine *m, int tid);

/* Hardware transactions. pm_xend returns 0 on commit, the abort status of an aborted
   transaction (ending it), or -PM_ERR_*; pm_xstatus the abort status of a doomed transaction
   (0 while live or outside one) or -PM_ERR_TID; pm_rdtsc the thread's TSC. */
int pm_xbegin(pm_machine *m, int tid);
int64_t pm_xend(pm_machine *m, int tid);
int pm_xabort(pm_machine *m, int tid, uint32_t code);
int64_t pm_xstatus(const pm_machine *m, int tid);
uint64_t pm_rdtsc(pm_machine *m, int tid);

/* Mark the line of addr conflict-exempt (HtmState.exempt_line): accesses to it are never
   transactional and abort no transaction. 0, PM_ERR_ADDR, or PM_ERR_VALUE when
   PM_HTM_EXEMPT_MAX other lines are exempt already. Kept across pm_reset_volatile. */
enum { PM_HTM_EXEMPT_MAX = 16 };
int pm_htm_exempt(pm_machine *m, uint64_t addr);

/* Clock of thread tid (NaN if tid is out of range). */
double pm_get_clock(const pm_machine *m, int tid);
/* t a finite time in ns, at least 0, else PM_ERR_VALUE and no change. */
int pm_set_clock(pm_machine *m, int tid, double t);

/* Run ops[0..n) writing loaded/old values (0 otherwise) to out; returns -1, or the index of
   the op that failed (its error in pm_error; the ops before it have run). */
int64_t pm_run_batch(pm_machine *m, const pm_op *ops, size_t n, uint64_t *out);

/* Statistics of every thread (cores records, time_ns = clock) copied to out. */
void pm_get_stats(const pm_machine *m, pm_stats *out);
/* The sum over threads of the uint64_t counter at byte `offset` of a pm_stats record, e.g.
   the stores of every thread, without copying the records; 0 for an offset outside the
   counters. */
uint64_t pm_stat_sum(const pm_machine *m, size_t offset);
size_t pm_trace_len(const pm_machine *m);
/* Copy trace records [0, n) to out (n <= pm_trace_len). */
void pm_trace_copy(const pm_machine *m, pm_event *out, size_t n);
void pm_trace_reset(pm_machine *m);

#endif
