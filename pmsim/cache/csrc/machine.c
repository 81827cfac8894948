/* The machine engine; see machine.h. Each function mirrors the method of the same name
   in pmsim/hw/engines/reference.py (PyEngine), statement for statement where floating point is
   involved, so that results are bit-identical. In functional mode (cfg.timed == 0) the
   instructions skip the memory system and the clocks, as FunctionalEngine does. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "machine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { LINE_SHIFT = 6, LINE_BYTES = 64 };
/* buckets of each DIMM calendar (reference.CAL_BUCKETS) */
enum { PM_CAL_BUCKETS = 4096, PM_ALLOC_RING = 256, PM_WRITE_RING = 256, PM_WPQ_LOOKBACK = 16384,
       PM_BANK_RING = 4096, PM_TRIM = 8 };
/* event kinds (pmsim.trace.Ev) */
enum { EV_STORE = 1, EV_NTSTORE = 2, EV_RMW = 3, EV_CLFLUSH = 4, EV_CLFLUSHOPT = 5,
       EV_CLWB = 6, EV_SFENCE = 7, EV_MFENCE = 8, EV_PCOMMIT = 9, EV_WB = 10, EV_MARK = 11 };
/* batch op codes (pmsim.hw.engines.reference.OP_*) */
enum { OP_LOAD, OP_STORE, OP_NTSTORE, OP_CLFLUSH, OP_CLFLUSHOPT, OP_CLWB, OP_SFENCE,
       OP_MFENCE, OP_PCOMMIT, OP_CAS, OP_XCHG, OP_WORK, OP_MARK, OP_PB, OP_XBEGIN, OP_XEND,
       OP_XABORT, OP_XSTATUS, OP_RDTSC };
/* write-back causes (aux of a WB event) */
enum { WB_EVICT = 0, WB_FLUSH = 1, WB_NT = 2 };
/* most events one instruction can append (accesses may evict through three levels and a
   snoop); the trace grows before an instruction runs so that it never fails half-way */
enum { EVENTS_PER_OP = 16, TRACE_INITIAL = 4096 };

/* One cache level. Tags and metadata are separate arrays (a lookup scans only the tags):
   tag = line + 1 (0 = empty way), meta = stamp << 1 | dirty. A looked-up entry is named by
   the address of its meta word. */
typedef struct cache {
    uint64_t *tag;
    uint64_t *meta;
    uint64_t mask;
    uint32_t ways;
    uint64_t clock; /* LRU stamp counter, bumped on every touch and insert */
    uint64_t used;  /* valid lines: snoops skip caches that hold none */
} cache;

/* ---- hardware transactions (pmsim/hw/htm.py) ------------------------------------------- */

enum { HTM_NONE = 0, HTM_LIVE = 1, HTM_DOOMED = 2 };
/* access kinds: load; store/movnt; CAS/xchg; clwb; clflush(opt) */
enum { ACC_READ = 0, ACC_WRITE = 1, ACC_RMW = 2, ACC_CLEAN = 3, ACC_INVAL = 4 };
/* what an instruction does with an access: as usual, transactionally, or not at all */
enum { MODE_PLAIN = 0, MODE_TX = 1, MODE_SKIP = 2 };
/* abort status bits (RTM's EAX layout; bit 6 is pmsim's flush abort) and the lock-busy code */
enum { XABORT_EXPLICIT = 1, XABORT_RETRY = 2, XABORT_CONFLICT = 4, XABORT_CAPACITY = 8,
       XABORT_FLUSH = 64, XABORT_LOCK_BUSY = 0xFF };

/* One line a transaction touched: the words it read, wrote (for conflicts) and buffered. */
typedef struct htm_line {
    uint64_t line;
    uint64_t words[8]; /* buffered values of the words in dmask */
    uint32_t slot;     /* its slot in the index */
    uint8_t rmask, wmask, dmask;
} htm_line;

/* One thread's transaction. lines[] holds every touched line in first-touch order, written[]
   the written ones (indices into lines[]) in first-write order; index[] is an open-addressing
   table line -> position + 1 (0: empty), kept at most half full; setcount[] counts written
   lines per L1 set. The arrays grow on demand and are kept between transactions. */
typedef struct htm_tx {
    int state;
    uint32_t status;
    htm_line *lines;
    uint32_t *written;
    uint32_t nlines, nread, nwritten, cap;
    uint32_t *index;
    uint32_t index_mask; /* slots - 1; 0 before the first allocation */
    uint16_t *setcount;
} htm_tx;

struct pm_machine {
    pm_config cfg;
    cache *l1, *l2;      /* per physical core (ncaches), shared by its hardware threads */
    cache llc;
    int ncaches;         /* physical cores (cfg.ncaches; cfg.core_of, cfg.sib per thread) */
    double *work_scale;  /* per thread: 1 / smt_speed beside a sibling, else 1 */
    pm_stats *st; /* time_ns is the thread's clock */
    double *pending;      /* latest WPQ acceptance a fence must wait for */
    double *pcommit_wait; /* drain time a fence must wait for (PDOM-0) */
    uint8_t *in_fixed_pb;
    uint64_t *wc; /* line + 1 of the thread's open write-combining buffer, 0: none */
    /* per DIMM (one WPQ without the DIMM model): its last writes in order of arrival, in a
       circular buffer of wpq_entries + PM_WPQ_LOOKBACK + 1 (room to insert before dropping) */
    double *ring_arr;    /* arrival */
    double *ring;        /* completion */
    double *ring_start;  /* when its media write begins */
    uint64_t *ring_line; /* the line it writes */
    uint32_t *ring_head, *ring_len;
    double *ring_gone;   /* completion of the last one forgotten */
    /* per bank (no DIMM model): its last busy intervals in time order, PM_BANK_RING + 1
       (both memories forget their oldest PM_WPQ_LOOKBACK / PM_TRIM or PM_BANK_RING / PM_TRIM
       at once when full) */
    double *bank_s, *bank_e;
    uint32_t *bank_head, *bank_len;
    double *bank_gone;   /* latest end of those forgotten */
    double *bank_free;   /* latest end of all (what a pcommit drains) */
    /* out-of-order core: per thread */
    double *sb_ring;     /* cores x sb_entries: when each buffered store reaches L1 */
    uint32_t *sb_idx;
    double *sb_last;     /* when the youngest buffered store reaches L1 */
    double *lag;         /* how long before it retires the next store is dispatched: the
                            last sfence's stall, until the thread serializes */
    double *lf_ring;     /* cores x lf_entries: when each miss slot is free */
    uint32_t *lf_idx;
    /* prefetchers: per thread */
    int64_t *pf_streams; /* cores x pf_streams x 4: page, last line, direction, frontier
                            (direct-mapped by page) */
    int64_t *pf_line;    /* cores x pf_slots: in-flight prefetched lines, direct-mapped by line;
                            -1: none */
    double *pf_ready;    /* ... when each arrives */
    uint32_t pf_slots;   /* reference.pf_slots(distance): a power of two */
    /* DIMMs */
    int64_t *xpb_line;   /* ndimm x xpb_lines: media line held, -1: none */
    uint8_t *xpb_mask;   /* cache lines of it written since its last media write */
    double *xpb_busy;    /* when its last media write ends */
    double *xpb_open;    /* when its last fill began (its first write's arrival, not
                            before its thread's previous write to the DIMM) ... */
    double *xpb_shut;    /* ... and ended (the write completing it); 0: not complete */
    uint64_t *xpb_seq;   /* its allocation's number */
    uint64_t *xpb_from;  /* allocations before its fill began */
    int32_t *xpb_tid;    /* the thread that filled it, -1: none */
    double *alloc_t;     /* ndimm x PM_ALLOC_RING: the buffer's last allocations' times */
    uint64_t *alloc_n;   /* allocations so far, per DIMM */
    double *dimm_last;   /* ndimm x cores: each thread's last write start at each DIMM */
    double *tw_t;        /* cores x PM_WRITE_RING: each thread's last writes' starts ... */
    uint32_t *tw_d;      /* ... and their DIMMs */
    uint64_t *tw_n;      /* writes so far, per thread */
    double *tr_a;        /* cores x PM_WRITE_RING: each thread's last reads' arrivals ... */
    double *tr_c;        /* ... their ends ... */
    uint32_t *tr_d;      /* ... and their DIMMs */
    uint64_t *tr_n;      /* reads so far, per thread */
    int cw_on, cr_on;    /* write / read streams' contention possible (more cores than
                            combine_writers, a chance above 0) */
    uint32_t *xpb_fill;
    uint64_t *rng;
    double *chan_free;   /* when each DIMM has accepted every write given to it */
    int64_t *cal_tag;    /* 3 x dimms calendars x PM_CAL_BUCKETS (none without the DIMM model;
                            2d: DIMM d's channel, 2d+1: its media, 2 dimms + d: its media's
                            reads when they go first): the bucket each cell holds */
    double *cal_used;    /* ... and the ns booked in it */
    double cal_w;        /* ns per bucket */
    uint32_t ndimm;      /* max(1, dimms) */
    uint64_t *rbase, *rend;
    uint64_t **rwords;
    uint64_t pm_base, pm_end;
    pm_event *tr;
    size_t tlen, tcap;
    int err;
    htm_tx *htm;
    int htm_active; /* threads in a transaction (live or doomed) */
    int htm_live;   /* threads in a live transaction */
    uint64_t htm_exempt[PM_HTM_EXEMPT_MAX]; /* conflict-exempt lines */
    uint32_t htm_nexempt;
};

/* A thread's private caches: its physical core's (reference: PyEngine.l1[tid]). */
#define L1(m, t) (&(m)->l1[(m)->cfg.core_of[t]])
#define L2(m, t) (&(m)->l2[(m)->cfg.core_of[t]])

/* ---- caches --------------------------------------------------------------------------- */

static int cache_init(cache *c, uint32_t sets, uint32_t ways)
{
    c->tag = calloc((size_t)sets * ways, sizeof(uint64_t));
    c->meta = calloc((size_t)sets * ways, sizeof(uint64_t));
    c->mask = (uint64_t)sets - 1;
    c->ways = ways;
    c->clock = 0;
    c->used = 0;
    return c->tag != NULL && c->meta != NULL;
}

static void cache_free(cache *c)
{
    free(c->tag);
    free(c->meta);
}

static void cache_clear(cache *c)
{
    size_t n = (size_t)(c->mask + 1) * c->ways;
    memset(c->tag, 0, n * sizeof(uint64_t));
    memset(c->meta, 0, n * sizeof(uint64_t));
    c->clock = 0;
    c->used = 0;
}

/* The meta word of `line`'s entry (without touching LRU), or NULL. */
static inline uint64_t *cache_lookup(cache *c, uint64_t line)
{
    size_t base = (size_t)(line & c->mask) * c->ways;
    const uint64_t *t = c->tag + base;
    uint64_t tag = line + 1;
    for (uint32_t i = 0; i < c->ways; i++)
        if (t[i] == tag)
            return c->meta + base + i;
    return NULL;
}

static inline void cache_touch(cache *c, uint64_t *e)
{
    c->clock++;
    *e = (c->clock << 1) | (*e & 1);
}

/* Empty the way of a looked-up entry. */
static inline void cache_drop(cache *c, uint64_t *e)
{
    c->tag[e - c->meta] = 0;
    *e = 0;
    c->used--;
}

/* Insert a line that is not present; returns 1 and the victim when the set was full. */
static inline int cache_insert(cache *c, uint64_t line, int dirty, uint64_t *vline, int *vdirty)
{
    size_t base = (size_t)(line & c->mask) * c->ways;
    uint64_t *t = c->tag + base, *mt = c->meta + base;
    uint32_t slot = c->ways;
    for (uint32_t i = 0; i < c->ways; i++) {
        if (t[i] == 0) {
            slot = i;
            break;
        }
    }
    int evicted = 0;
    if (slot == c->ways) {
        slot = 0;
        for (uint32_t i = 1; i < c->ways; i++)
            if (mt[i] < mt[slot])
                slot = i;
        *vline = t[slot] - 1;
        *vdirty = (int)(mt[slot] & 1);
        evicted = 1;
    } else {
        c->used++;
    }
    c->clock++;
    t[slot] = line + 1;
    mt[slot] = (c->clock << 1) | (dirty ? 1u : 0u);
    return evicted;
}

static inline int cache_remove(cache *c, uint64_t line)
{
    uint64_t *e = cache_lookup(c, line);
    if (e == NULL)
        return 0;
    cache_drop(c, e);
    return 1;
}

/* ---- memory map, trace -------------------------------------------------------------- */

/* The word of an 8-byte aligned address, or NULL; *pm tells whether it is in the PM region. */
static inline uint64_t *locate(pm_machine *m, uint64_t addr, int *pm)
{
    if (addr & 7)
        return NULL;
    if (addr >= m->pm_base && addr < m->pm_end) {
        *pm = 1;
        return m->rwords[m->cfg.pm_index] + ((addr - m->pm_base) >> 3);
    }
    *pm = 0;
    for (uint32_t i = 0; i < m->cfg.nregions; i++)
        if (addr >= m->rbase[i] && addr < m->rend[i])
            return m->rwords[i] + ((addr - m->rbase[i]) >> 3);
    return NULL;
}

static inline int bad_tid(const pm_machine *m, int tid)
{
    return tid < 0 || tid >= m->cfg.cores;
}

/* Make room for n more events; 0 on success. */
static int reserve_n(pm_machine *m, size_t n)
{
    if (m->tcap - m->tlen >= n)
        return 0;
    size_t cap = m->tcap * 2;
    while (cap - m->tlen < n)
        cap *= 2;
    pm_event *t = realloc(m->tr, cap * sizeof(pm_event));
    if (t == NULL)
        return PM_ERR_NOMEM;
    m->tr = t;
    m->tcap = cap;
    return 0;
}

/* Make room for the events of one instruction; 0 on success. */
static inline int reserve(pm_machine *m)
{
    return m->tcap - m->tlen >= EVENTS_PER_OP ? 0 : reserve_n(m, EVENTS_PER_OP);
}

static inline void emit(pm_machine *m, int kind, int tid, uint32_t aux, uint64_t addr,
                        uint64_t value)
{
    pm_event *e = &m->tr[m->tlen++];
    e->kind = (uint8_t)kind;
    e->pad = 0;
    e->tid = (uint16_t)tid;
    e->aux = aux;
    e->addr = addr;
    e->value = value;
    e->time = m->st[tid].time_ns;
}

/* Python's int(round(x)): round half to even (0 where the reference would fail: NaN, inf
   or a value beyond the 64-bit trace field). */
static uint64_t round_half_even(double x)
{
    double a = x < 0.0 ? -x : x;
    if (!(a < 9.2e18))
        return 0;
    uint64_t i = (uint64_t)a;
    double frac = a - (double)i;
    if (frac > 0.5 || (frac == 0.5 && (i & 1)))
        i++;
    return x < 0.0 ? (uint64_t)(-(int64_t)i) : i;
}

/* ---- memory system ------------------------------------------------------------------- */

/* ---- the DIMM model (reference: PyEngine._dimm_* and _xpb_*) ---------------------------- */

/* Book occ ns of calendar cal (2d: DIMM d's channel, 2d+1: its media, 2 dimms + d: its
   media's reads when they go first) at or after t; return when the work starts. What does
   not fit in the first bucket with room runs on into the next ones (PyEngine._book). */
static inline size_t cal_index(int64_t b)
{
    int64_t i = b % PM_CAL_BUCKETS; /* C's % keeps the sign: a time before 0 is a bucket too */
    return (size_t)(i < 0 ? i + PM_CAL_BUCKETS : i);
}

static double book(pm_machine *m, uint32_t cal, double t, double occ)
{
    double w = m->cal_w;
    int64_t *tags = &m->cal_tag[(size_t)cal * PM_CAL_BUCKETS];
    double *used = &m->cal_used[(size_t)cal * PM_CAL_BUCKETS];
    int64_t b = (int64_t)floor(t / w);
    size_t i;
    for (;;) {
        i = cal_index(b);
        if (tags[i] != b) {
            tags[i] = b;
            used[i] = 0.0;
        }
        if (used[i] < w || occ <= 0.0)
            break;
        b++;
    }
    double s = (double)b * w + used[i];
    double rest = occ;
    while (used[i] + rest > w) {
        rest -= w - used[i];
        used[i] = w;
        b++;
        i = cal_index(b);
        if (tags[i] != b) {
            tags[i] = b;
            used[i] = 0.0;
        }
    }
    used[i] += rest;
    return t > s ? t : s;
}

static inline uint32_t dimm_of(const pm_machine *m, uint64_t line)
{
    return (uint32_t)((line >> m->cfg.il_shift) % m->cfg.dimms);
}

static inline int64_t xpb_find(const pm_machine *m, uint32_t d, uint64_t xpl)
{
    const int64_t *lines = &m->xpb_line[(size_t)d * m->cfg.xpb_lines];
    for (uint32_t k = 0; k < m->xpb_fill[d]; k++)
        if (lines[k] == (int64_t)xpl)
            return k;
    return -1;
}

/* The next draw of DIMM d's replacement generator (PyEngine._rand). */
static inline uint64_t dimm_rand(pm_machine *m, uint32_t d)
{
    uint64_t x = m->rng[d] * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    m->rng[d] = x;
    return x >> 33;
}

/* A media line written in two parts because it was evicted half written at t: a
   read-modify-write then and another when its rest is evicted. Returns when the extra media
   write ends (PyEngine._half_evicted). */
static double half_evicted(pm_machine *m, int tid, uint32_t d, double t)
{
    pm_stats *st = &m->st[tid];
    st->xpb_rmw += 2;
    st->media_read_bytes += 2 * 256;
    st->media_write_bytes += 256;
    return book(m, 2 * d + 1, t, m->cfg.media_write_ns) + m->cfg.media_write_ns;
}

/* An entry for media line xpl of DIMM d at time t: an empty one, else a random victim, written
   back first if partly written. Returns it; *ready is when it is free. */
static uint32_t xpb_alloc(pm_machine *m, int tid, uint32_t d, uint64_t xpl, double t,
                          double *ready_out)
{
    const pm_config *c = &m->cfg;
    pm_stats *st = &m->st[tid];
    size_t base = (size_t)d * c->xpb_lines;
    uint32_t k;
    double ready;
    if (m->xpb_fill[d] < c->xpb_lines) {
        k = m->xpb_fill[d]++;
        ready = t;
    } else {
        k = (uint32_t)(dimm_rand(m, d) % c->xpb_lines);
        ready = t >= m->xpb_busy[base + k] ? t : m->xpb_busy[base + k];
        if (m->xpb_mask[base + k]) {
            st->xpb_rmw += 1;
            st->media_read_bytes += 256;
            st->media_write_bytes += 256;
            ready = book(m, 2 * d + 1, ready, c->media_write_ns) + c->media_write_ns;
        } else if (m->xpb_tid[base + k] != tid && m->xpb_open[base + k] < t
                   && t < m->xpb_shut[base + k]) {
            /* complete now, but another thread's line half written at t */
            double end = half_evicted(m, tid, d, ready);
            if (end > ready)
                ready = end;
        }
    }
    m->xpb_line[base + k] = (int64_t)xpl;
    m->xpb_mask[base + k] = 0;
    m->xpb_busy[base + k] = ready;
    m->xpb_shut[base + k] = 0.0;
    uint64_t i = m->alloc_n[d];
    m->alloc_t[(size_t)d * PM_ALLOC_RING + i % PM_ALLOC_RING] = t;
    m->xpb_seq[base + k] = i;
    m->alloc_n[d] = i + 1;
    *ready_out = ready;
    return k;
}

/* Whether entry e, whose media line was written from xpb_open to shut, survived the
   allocations of other lines in that interval simulated before its first write: each evicts it
   with probability 1 / xpb_lines (PyEngine._xpb_survives). */
static int xpb_survives(pm_machine *m, uint32_t d, size_t e, double shut)
{
    double lo = m->xpb_open[e];
    uint64_t n = m->xpb_from[e], own = m->xpb_seq[e];
    const double *times = &m->alloc_t[(size_t)d * PM_ALLOC_RING];
    uint64_t all = m->alloc_n[d]; /* the ring holds the last PM_ALLOC_RING of them */
    for (uint64_t i = all > PM_ALLOC_RING ? all - PM_ALLOC_RING : 0; i < n; i++) {
        double ti = times[i % PM_ALLOC_RING];
        if (i != own && lo < ti && ti < shut && dimm_rand(m, d) % m->cfg.xpb_lines == 0)
            return 0;
    }
    return 1;
}

/* Whether the streams DIMM d serves at t cost an access its buffer entry: every thread with
   an access of the kind to d in the buffer's turnover time before t (a write that started
   then; a read that arrived by t and ended then), weighted by the share of its accesses in
   that time that went to d; each stream beyond combine_writers with chance contention (writes)
   or read_contention (reads) (PyEngine._contended). */
static int contended(pm_machine *m, uint32_t d, double t, int reads)
{
    const pm_config *c = &m->cfg;
    const double *starts = reads ? m->tr_a : m->tw_t;
    const double *ends = reads ? m->tr_c : m->tw_t;
    const uint32_t *dimms = reads ? m->tr_d : m->tw_d;
    const uint64_t *counts = reads ? m->tr_n : m->tw_n;
    double q = reads ? c->read_contention : c->contention;
    double lo = t - c->contention_window_ns, streams = 0.0;
    int threads = 0;
    for (int u = 0; u < c->cores; u++) {
        const double *ta = &starts[(size_t)u * PM_WRITE_RING];
        const double *tc = &ends[(size_t)u * PM_WRITE_RING];
        const uint32_t *td = &dimms[(size_t)u * PM_WRITE_RING];
        uint64_t k = counts[u];
        long here = 0, total = 0;
        for (uint64_t i = k > PM_WRITE_RING ? k - PM_WRITE_RING : 0; i < k; i++) {
            size_t j = (size_t)(i % PM_WRITE_RING);
            if (ta[j] <= t && lo < tc[j]) {
                total++;
                here += td[j] == d;
            }
        }
        if (here) {
            threads++;
            streams += (double)here / (double)total;
        }
    }
    double extra = streams - (double)c->combine_writers;
    if (threads <= (int)c->combine_writers || extra <= 0.0)
        return 0;
    return (double)dimm_rand(m, d) < (1.0 - pow(1.0 - q, extra)) * 2147483648.0;
}

/* The DIMM takes one 64 B write from its WPQ at `accept`: returns when it starts (*done: when
   it is accepted). */
static double dimm_write(pm_machine *m, int tid, uint32_t d, uint64_t line, double accept,
                         double arrive, double *done_out)
{
    const pm_config *c = &m->cfg;
    pm_stats *st = &m->st[tid];
    double start = book(m, 2 * d, accept, c->pm_write_ns);
    uint64_t xpl = line >> 2;
    int64_t k = xpb_find(m, d, xpl);
    if (k < 0) {
        st->xpb_misses += 1;
        double ready;
        k = xpb_alloc(m, tid, d, xpl, start, &ready);
        if (ready > start)
            start = ready;
    } else {
        st->xpb_hits += 1;
    }
    double done = start + c->pm_write_ns;
    if (done > m->chan_free[d])
        m->chan_free[d] = done;
    size_t e = (size_t)d * c->xpb_lines + (size_t)k;
    double *last = &m->dimm_last[(size_t)d * c->cores + (size_t)tid];
    if (!m->xpb_mask[e]) {
        m->xpb_open[e] = arrive > *last ? arrive : *last;
        m->xpb_from[e] = m->alloc_n[d];
        m->xpb_tid[e] = tid;
    }
    *last = start;
    {
        uint64_t i = m->tw_n[tid];
        m->tw_t[(size_t)tid * PM_WRITE_RING + i % PM_WRITE_RING] = start;
        m->tw_d[(size_t)tid * PM_WRITE_RING + i % PM_WRITE_RING] = d;
        m->tw_n[tid] = i + 1;
    }
    uint8_t mask = (uint8_t)(m->xpb_mask[e] | (1u << (line & 3)));
    if (mask == 15) {
        mask = 0;
        m->xpb_shut[e] = start;
        if (!xpb_survives(m, d, e, start) || (m->cw_on && contended(m, d, start, 0)))
            half_evicted(m, tid, d, start);
        st->media_write_bytes += 256;
        m->xpb_busy[e] = book(m, 2 * d + 1, done, c->media_write_ns) + c->media_write_ns;
    }
    m->xpb_mask[e] = mask;
    *done_out = done;
    return start;
}

/* Remember a read of DIMM d (when it arrived, when it left the buffer or media) among the
   thread's reads, for the read streams' contention (PyEngine._read_done). */
static inline void read_done(pm_machine *m, int tid, uint32_t d, double arrive, double end)
{
    size_t j = (size_t)tid * PM_WRITE_RING + (size_t)(m->tr_n[tid] % PM_WRITE_RING);
    m->tr_a[j] = arrive;
    m->tr_c[j] = end;
    m->tr_d[j] = d;
    m->tr_n[tid] += 1;
}

/* Latency of a PM read arriving at its DIMM at t (beyond the LLC's). */
static double dimm_read(pm_machine *m, int tid, uint64_t line, double t)
{
    const pm_config *c = &m->cfg;
    pm_stats *st = &m->st[tid];
    uint32_t d = dimm_of(m, line);
    uint64_t xpl = line >> 2;
    int held = xpb_find(m, d, xpl) >= 0;
    if (held && !(m->cr_on && contended(m, d, t, 1))) {
        st->xpb_hits += 1;
        if (m->cr_on)
            read_done(m, tid, d, t, t);
        return c->pm_read_ns;
    }
    st->xpb_misses += 1;
    st->media_read_bytes += 256;
    double ms;
    if (c->read_priority) {
        ms = book(m, 2 * c->dimms + d, t, c->media_read_occ_ns);
        book(m, 2 * d + 1, ms, c->media_read_occ_ns);
    } else {
        ms = book(m, 2 * d + 1, t, c->media_read_occ_ns);
    }
    if (!held) { /* a line read again is still the buffer's entry */
        double ready;
        xpb_alloc(m, tid, d, xpl, ms, &ready);
    }
    if (m->cr_on)
        read_done(m, tid, d, t, ms + c->media_read_occ_ns);
    return (ms - t) + c->pm_read_ns + c->media_read_ns;
}

/* Latency of a line read from memory at t (beyond the LLC's), with its bytes. */
static inline double memory_read(pm_machine *m, int tid, uint64_t line, double t)
{
    pm_stats *st = &m->st[tid];
    uint64_t addr = line << LINE_SHIFT;
    if (addr >= m->pm_base && addr < m->pm_end) {
        st->pm_read_bytes += LINE_BYTES;
        if (m->cfg.dimms)
            return dimm_read(m, tid, line, t);
        return m->cfg.pm_read_ns;
    }
    st->dram_read_bytes += LINE_BYTES;
    return m->cfg.dram_ns;
}

/* Book pm_write_ns of bank `bank` in its first idle gap at or after t; return when the write
   starts. Writes simulated late fill the gaps the others left (reference.PyEngine._bank_fit). */
static double bank_fit(pm_machine *m, uint32_t bank, double t)
{
    double w = m->cfg.pm_write_ns;
    const uint32_t S = PM_BANK_RING + 1;
    size_t base = (size_t)bank * S;
    uint32_t head = m->bank_head[bank], len = m->bank_len[bank];
    double *bs = m->bank_s, *be = m->bank_e;
#define BQ(r) (base + (head + (r)) % S)
    double gone = m->bank_gone[bank];
    double s = t >= gone ? t : gone;
    uint32_t lo = 0, hi = len;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (be[BQ(mid)] > s)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint32_t i = lo;
    while (i < len && s + w > bs[BQ(i)]) {
        if (be[BQ(i)] > s)
            s = be[BQ(i)];
        i++;
    }
    double e = s + w;
    for (uint32_t r = len; r > i; r--) {
        bs[BQ(r)] = bs[BQ(r - 1)];
        be[BQ(r)] = be[BQ(r - 1)];
    }
    bs[BQ(i)] = s;
    be[BQ(i)] = e;
    len++;
    if (len > PM_BANK_RING) {
        uint32_t k = len - PM_BANK_RING + PM_BANK_RING / PM_TRIM;
        if (be[BQ(k - 1)] > gone)
            m->bank_gone[bank] = be[BQ(k - 1)];
        head = (head + k) % S;
        len -= k;
    }
#undef BQ
    m->bank_head[bank] = head;
    m->bank_len[bank] = len;
    if (e > m->bank_free[bank])
        m->bank_free[bank] = e;
    return s;
}

/* Insert a line write into the WPQ; return the time it was accepted (and *done). The WPQ's
   wpq_entries slots are taken in order of arrival: a write waits for the one that arrived
   wpq_entries writes before it to be done, whatever order the threads were simulated in. With
   merge_writes, a write to a line whose queued write has not begun its media write merges into
   it (as gem5's memory controller merges a burst already in its write queue): no entry, no
   media write, accepted on arrival, done with that write. With the DIMM model the WPQ is per
   DIMM and `done` is the DIMM's acceptance. */
static double wpq_insert(pm_machine *m, int tid, double arrive, uint64_t line, double *done_out)
{
    const pm_config *c = &m->cfg;
    pm_stats *st = &m->st[tid];
    uint32_t d = c->dimms ? dimm_of(m, line) : 0;
    const uint32_t n = c->wpq_entries, cap = n + PM_WPQ_LOOKBACK, S = cap + 1;
    size_t base = (size_t)d * S;
    uint32_t head = m->ring_head[d], len = m->ring_len[d];
#define RQ(r) (base + (head + (r)) % S)
    uint32_t lo = 0, hi = len;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (m->ring_arr[RQ(mid)] > arrive)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint32_t p = lo;
    for (uint32_t r = p > n ? p - n : 0; c->merge_writes && r < p; r++) {
        if (m->ring_line[RQ(r)] == line && m->ring_start[RQ(r)] > arrive) {
            st->wpq_merged += 1;
            if (done_out)
                *done_out = m->ring[RQ(r)];
            return arrive;
        }
    }
    double oldest = p >= n ? m->ring[RQ(p - n)] : m->ring_gone[d];
    double accept = arrive >= oldest ? arrive : oldest;
    double start, done;
    if (c->dimms) {
        start = dimm_write(m, tid, d, line, accept, arrive, &done);
    } else {
        start = bank_fit(m, (uint32_t)(line % c->banks), accept);
        done = start + c->pm_write_ns;
    }
    for (uint32_t r = len; r > p; r--) {
        m->ring_arr[RQ(r)] = m->ring_arr[RQ(r - 1)];
        m->ring[RQ(r)] = m->ring[RQ(r - 1)];
        m->ring_start[RQ(r)] = m->ring_start[RQ(r - 1)];
        m->ring_line[RQ(r)] = m->ring_line[RQ(r - 1)];
    }
    m->ring_arr[RQ(p)] = arrive;
    m->ring[RQ(p)] = done;
    m->ring_start[RQ(p)] = start;
    m->ring_line[RQ(p)] = line;
    len++;
    uint64_t occ = 0;
    for (uint32_t r = p + 1 > n ? p + 1 - n : 0; r <= p; r++)
        occ += m->ring[RQ(r)] > accept;
    if (len > cap) {
        uint32_t k = len - cap + PM_WPQ_LOOKBACK / PM_TRIM;
        m->ring_gone[d] = m->ring[RQ(k - 1)];
        head = (head + k) % S;
        len -= k;
    }
#undef RQ
    m->ring_head[d] = head;
    m->ring_len[d] = len;
    st->wpq_inserts += 1;
    st->wpq_occ_sum += occ;
    if (occ > st->wpq_occ_max)
        st->wpq_occ_max = occ;
    st->pm_write_bytes += LINE_BYTES;
    if (done_out)
        *done_out = done;
    return accept;
}

/* A dirty line leaves the caches at t; return the WPQ acceptance time (0 for DRAM). */
static double write_back_memory(pm_machine *m, int tid, uint64_t line, int cause, double t)
{
    uint64_t addr = line << LINE_SHIFT;
    if (addr >= m->pm_base && addr < m->pm_end) {
        double arrive = t + m->cfg.to_wpq_ns;
        double done;
        double accept = wpq_insert(m, tid, arrive, line, &done);
        emit(m, EV_WB, tid, (uint32_t)cause, addr, round_half_even(done * 1000));
        return accept;
    }
    m->st[tid].dram_write_bytes += LINE_BYTES;
    return 0.0;
}

/* Write a dirty victim of level `level` (1 L1, 2 L2, 3 LLC) to the next level. */
static void evict_to(pm_machine *m, int tid, int level, uint64_t line)
{
    pm_stats *st = &m->st[tid];
    while (level < 3) {
        cache *nxt = level == 1 ? L2(m, tid) : &m->llc;
        uint64_t *e = cache_lookup(nxt, line);
        if (e != NULL) {
            *e |= 1;
            return;
        }
        uint64_t vline;
        int vdirty;
        if (!cache_insert(nxt, line, 1, &vline, &vdirty) || !vdirty)
            return;
        level++;
        line = vline;
    }
    st->writebacks += 1;
    double accept = write_back_memory(m, tid, line, WB_EVICT, st->time_ns);
    double arrive = st->time_ns + m->cfg.to_wpq_ns;
    if (accept > arrive) {
        double stall = accept - arrive;
        st->wpq_stall_ns += stall;
        st->time_ns += stall;
    }
}

/* Insert a clean copy of `line` into level `level` (1, 2 or 3). */
static inline void fill(pm_machine *m, int tid, int level, uint64_t line)
{
    cache *c = level == 1 ? L1(m, tid) : level == 2 ? L2(m, tid) : &m->llc;
    uint64_t vline;
    int vdirty;
    if (cache_insert(c, line, 0, &vline, &vdirty) && vdirty)
        evict_to(m, tid, level, vline);
}

static int snoop_downgrade(pm_machine *m, int tid, uint64_t line)
{
    int hit = 0;
    for (int d = 0; d < m->ncaches; d++) {
        if (d == m->cfg.core_of[tid])
            continue;
        uint64_t *e = m->l1[d].used ? cache_lookup(&m->l1[d], line) : NULL;
        if (e != NULL && (*e & 1)) {
            *e &= ~(uint64_t)1;
            hit = 1;
        }
        e = m->l2[d].used ? cache_lookup(&m->l2[d], line) : NULL;
        if (e != NULL && (*e & 1)) {
            *e &= ~(uint64_t)1;
            hit = 1;
        }
    }
    if (hit) {
        uint64_t *e = cache_lookup(&m->llc, line);
        if (e != NULL) {
            *e |= 1;
        } else {
            uint64_t vline;
            int vdirty;
            if (cache_insert(&m->llc, line, 1, &vline, &vdirty) && vdirty)
                evict_to(m, tid, 3, vline);
        }
    }
    return hit;
}

static inline int snoop_invalidate(pm_machine *m, int tid, uint64_t line)
{
    int hit = 0;
    for (int d = 0; d < m->ncaches; d++) {
        if (d == m->cfg.core_of[tid])
            continue;
        if (m->l1[d].used)
            hit |= cache_remove(&m->l1[d], line);
        if (m->l2[d].used)
            hit |= cache_remove(&m->l2[d], line);
    }
    return hit;
}

/* ---- prefetchers (reference: PyEngine._pf_take, _prefetch, _pf_train) ------------------ */

/* Remove line from the thread's in-flight prefetches; its arrival time, or -1.0. */
static inline double pf_take(pm_machine *m, int tid, uint64_t line)
{
    size_t i = (size_t)tid * m->pf_slots + (line & (m->pf_slots - 1));
    if (m->pf_line[i] == (int64_t)line) {
        m->pf_line[i] = -1;
        return m->pf_ready[i];
    }
    return -1.0;
}

/* Fetch line into the thread's L2 (and the LLC) at t, unless a private cache holds it. */
static void hw_prefetch(pm_machine *m, int tid, uint64_t line, double t)
{
    const pm_config *c = &m->cfg;
    if (cache_lookup(L1(m, tid), line) != NULL || cache_lookup(L2(m, tid), line) != NULL)
        return;
    for (int d = 0; d < m->ncaches; d++) {
        if (d == m->cfg.core_of[tid])
            continue;
        if ((m->l1[d].used && cache_lookup(&m->l1[d], line) != NULL)
            || (m->l2[d].used && cache_lookup(&m->l2[d], line) != NULL))
            return;
    }
    double lat = c->llc_ns;
    uint64_t *e = cache_lookup(&m->llc, line);
    if (e != NULL) {
        cache_touch(&m->llc, e);
    } else {
        lat += memory_read(m, tid, line, t + lat);
        fill(m, tid, 3, line);
    }
    fill(m, tid, 2, line);
    m->st[tid].pf_issued += 1;
    size_t i = (size_t)tid * m->pf_slots + (line & (m->pf_slots - 1));
    m->pf_line[i] = (int64_t)line;
    m->pf_ready[i] = t + lat;
}

/* The L2 streamer sees a demand miss (or a hit on a prefetched line) at line. */
static void pf_train(pm_machine *m, int tid, uint64_t line, double t)
{
    const pm_config *c = &m->cfg;
    if (!c->pf_stream)
        return;
    int64_t page = (int64_t)(line >> 6), l = (int64_t)line;
    int64_t *e = &m->pf_streams[((size_t)tid * c->pf_streams + (size_t)(line >> 6) % c->pf_streams)
                                * 4];
    if (e[0] != page) {
        e[0] = page;
        e[1] = l;
        e[2] = 0;
        e[3] = l;
        return;
    }
    int64_t delta = l - e[1];
    e[1] = l;
    if (delta != 1 && delta != -1)
        return;
    if (e[2] != delta) {
        e[2] = delta;
        e[3] = l;
        return;
    }
    int64_t f = e[3];
    if ((f - l) * delta < 0)
        f = l;
    uint32_t n = 0;
    int64_t x = f + delta;
    while (n < c->pf_degree && (x - l) * delta <= (int64_t)c->pf_distance && x >= 0
           && (x >> 6) == page) {
        hw_prefetch(m, tid, (uint64_t)x, t);
        f = x;
        x += delta;
        n++;
    }
    e[3] = f;
}

/* Run one access issued at t through the hierarchy; return the latency and the level that
   hit (1-4). write: 0 a read; 1 a write (other copies invalidated, the L1 copy dirty); 2 a
   transactional write (other copies invalidated, the data buffered: the L1 copy unchanged).
   A miss in L2, or a hit on a prefetched line, trains the prefetchers. */
static inline double mem_access(pm_machine *m, int tid, uint64_t line, int write, double t,
                                int *level_out)
{
    const pm_config *c = &m->cfg;
    pm_stats *st = &m->st[tid];
    cache *l1 = L1(m, tid), *l2 = L2(m, tid);
    int pf_on = c->pf_stream || c->pf_adjacent;
    double lat = 0.0;
    int level;
    uint64_t *e = cache_lookup(l1, line);
    if (e != NULL) {
        cache_touch(l1, e);
        st->l1_hits += 1;
        level = 1;
        lat = c->l1_ns;
    } else {
        st->l1_misses += 1;
        e = cache_lookup(l2, line);
        if (e != NULL) {
            cache_touch(l2, e);
            st->l2_hits += 1;
            level = 2;
            lat = c->l2_ns;
            if (pf_on) {
                double ready = pf_take(m, tid, line);
                if (ready >= 0.0) {
                    st->pf_useful += 1;
                    if (ready - t > lat) {
                        st->pf_late += 1;
                        lat = ready - t;
                    }
                    pf_train(m, tid, line, t);
                }
            }
        } else {
            st->l2_misses += 1;
            if (!write && c->cores > 1 && snoop_downgrade(m, tid, line)) {
                st->snoops += 1;
                lat += c->snoop_ns;
            }
            e = cache_lookup(&m->llc, line);
            if (e != NULL) {
                cache_touch(&m->llc, e);
                st->llc_hits += 1;
                level = 3;
                lat += c->llc_ns;
            } else {
                st->llc_misses += 1;
                level = 4;
                lat += c->llc_ns + memory_read(m, tid, line, t + lat + c->llc_ns);
                fill(m, tid, 3, line);
            }
            fill(m, tid, 2, line);
            if (pf_on) {
                pf_take(m, tid, line);
                if (c->pf_adjacent)
                    hw_prefetch(m, tid, line ^ 1, t);
                pf_train(m, tid, line, t);
            }
        }
        fill(m, tid, 1, line);
        e = NULL;
    }
    if (write) {
        if (c->cores > 1 && snoop_invalidate(m, tid, line)) {
            st->snoops += 1;
            lat += c->snoop_ns;
        }
        if (write == 1) {
            if (e == NULL)
                e = cache_lookup(l1, line);
            *e |= 1;
        }
    }
    *level_out = level;
    return lat;
}

/* ---- the out-of-order core's store buffer (reference: PyEngine._sb_*) ------------------ */

/* A store on the ooo core (PyEngine._sb_store): it retires into the store buffer at the
   thread's clock (stalling only while the buffer is full) and reaches L1 after the older
   stores, when its read for ownership is done. That read issues when the store was
   dispatched: at retirement, or earlier after a stalled sfence (lag), once its buffer entry is
   free; a miss takes a fill buffer. Returns the level that served it. */
static int sb_store(pm_machine *m, int tid, uint64_t line, int kind)
{
    pm_stats *st = &m->st[tid];
    double t = st->time_ns;
    double *ring = &m->sb_ring[(size_t)tid * m->cfg.sb_entries];
    uint32_t i = m->sb_idx[tid];
    if (ring[i] > t) {
        st->sb_stall_ns += ring[i] - t;
        t = ring[i];
        st->time_ns = t;
    }
    double issue = t - m->lag[tid];
    if (ring[i] > issue)
        issue = ring[i];
    int level;
    double lat = mem_access(m, tid, line, kind, issue, &level);
    if (level > 1) {
        double *lf = &m->lf_ring[(size_t)tid * m->cfg.lf_entries];
        uint32_t j = m->lf_idx[tid];
        if (lf[j] > issue)
            issue = lf[j];
        lf[j] = issue + lat;
        m->lf_idx[tid] = (j + 1) % m->cfg.lf_entries;
    }
    double done = issue + lat;
    if (done < t)
        done = t;
    if (done < m->sb_last[tid])
        done = m->sb_last[tid];
    ring[i] = done;
    m->sb_idx[tid] = (i + 1) % m->cfg.sb_entries;
    m->sb_last[tid] = done;
    st->time_ns = t + m->cfg.store_ns;
    return level;
}

/* Wait until every buffered store of the thread reached L1 (ooo core only). */
static inline void sb_drain(pm_machine *m, int tid)
{
    pm_stats *st = &m->st[tid];
    if (m->cfg.ooo && m->sb_last[tid] > st->time_ns) {
        st->sb_stall_ns += m->sb_last[tid] - st->time_ns;
        st->time_ns = m->sb_last[tid];
    }
}

/* The time a flush can write back: after the older stores reached L1. */
static inline double sb_after(const pm_machine *m, int tid)
{
    double t = m->st[tid].time_ns;
    if (m->cfg.ooo && m->sb_last[tid] > t)
        return m->sb_last[tid];
    return t;
}

/* Clean (and optionally drop) every copy; write back once if any copy was dirty.
   Returns the WPQ acceptance time, or -1.0 when nothing was written back. */
static double flush_line(pm_machine *m, int tid, uint64_t line, int invalidate, int cause,
                         double t)
{
    int dirty = 0;
    int k = m->ncaches, n = 2 * k + 1;
    for (int i = 0; i < n; i++) {
        cache *c = i < k ? &m->l1[i] : i < 2 * k ? &m->l2[i - k] : &m->llc;
        uint64_t *e = cache_lookup(c, line);
        if (e != NULL) {
            if (*e & 1) {
                dirty = 1;
                *e &= ~(uint64_t)1;
            }
            if (invalidate)
                cache_drop(c, e);
        }
    }
    if (!dirty)
        return -1.0;
    return write_back_memory(m, tid, line, cause, t);
}

/* ---- hardware transactions: sets, conflicts, capacity --------------------------------- */

static inline uint32_t line_hash(uint64_t line)
{
    return (uint32_t)((line * 0x9E3779B97F4A7C15ULL) >> 32);
}

static htm_line *htm_find(const htm_tx *h, uint64_t line)
{
    if (h->nlines == 0)
        return NULL;
    uint32_t mask = h->index_mask;
    for (uint32_t i = line_hash(line) & mask;; i = (i + 1) & mask) {
        uint32_t k = h->index[i];
        if (k == 0)
            return NULL;
        if (h->lines[k - 1].line == line)
            return &h->lines[k - 1];
    }
}

static inline void htm_index_insert(htm_tx *h, uint32_t k)
{
    uint32_t i = line_hash(h->lines[k].line) & h->index_mask;
    while (h->index[i])
        i = (i + 1) & h->index_mask;
    h->index[i] = k + 1;
    h->lines[k].slot = i;
}

/* Room for one more line; 0, or PM_ERR_NOMEM with the transaction unchanged. */
static int htm_reserve(pm_machine *m, htm_tx *h)
{
    if (h->setcount == NULL) {
        h->setcount = calloc(m->cfg.l1_sets, sizeof(uint16_t));
        if (h->setcount == NULL)
            return PM_ERR_NOMEM;
    }
    if (h->nlines == h->cap) {
        size_t cap = h->cap ? (size_t)h->cap * 2 : 16;
        htm_line *l = realloc(h->lines, cap * sizeof(htm_line));
        if (l == NULL)
            return PM_ERR_NOMEM;
        h->lines = l;
        uint32_t *w = realloc(h->written, cap * sizeof(uint32_t));
        if (w == NULL)
            return PM_ERR_NOMEM;
        h->written = w;
        h->cap = (uint32_t)cap;
    }
    if (2 * ((size_t)h->nlines + 1) > (size_t)h->index_mask + 1) {
        size_t slots = h->index_mask ? 2 * ((size_t)h->index_mask + 1) : 32;
        uint32_t *idx = calloc(slots, sizeof(uint32_t));
        if (idx == NULL)
            return PM_ERR_NOMEM;
        free(h->index);
        h->index = idx;
        h->index_mask = (uint32_t)(slots - 1);
        for (uint32_t k = 0; k < h->nlines; k++)
            htm_index_insert(h, k);
    }
    return 0;
}

static inline uint64_t l1_set(const pm_machine *m, uint64_t line)
{
    return line & ((uint64_t)m->cfg.l1_sets - 1);
}

/* Forget a transaction's sets and buffered stores. */
static void htm_clear(pm_machine *m, htm_tx *h)
{
    for (uint32_t k = 0; k < h->nlines; k++)
        h->index[h->lines[k].slot] = 0;
    for (uint32_t k = 0; k < h->nwritten; k++)
        h->setcount[l1_set(m, h->lines[h->written[k]].line)] = 0;
    h->nlines = h->nread = h->nwritten = 0;
}

/* Abort thread tid's live transaction with status (HtmState.doom). */
static void htm_doom(pm_machine *m, int tid, uint32_t status)
{
    htm_tx *h = &m->htm[tid];
    pm_stats *st = &m->st[tid];
    h->state = HTM_DOOMED;
    h->status = status;
    m->htm_live--;
    htm_clear(m, h);
    if (status & XABORT_EXPLICIT) {
        if (((status >> 24) & 0xFF) == XABORT_LOCK_BUSY)
            st->htm_aborts_lock += 1;
        else
            st->htm_aborts_explicit += 1;
    } else if (status & XABORT_CONFLICT) {
        st->htm_aborts_conflict += 1;
    } else if (status & XABORT_CAPACITY) {
        st->htm_aborts_capacity += 1;
    } else {
        st->htm_aborts_flush += 1;
    }
}

/* Add an access to a live transaction's sets (room reserved): 1, or 0 after a capacity abort. */
static int htm_track(pm_machine *m, int tid, uint64_t line, uint8_t bit, int rd, int wr)
{
    htm_tx *h = &m->htm[tid];
    htm_line *e = htm_find(h, line);
    int new_r = rd && (e == NULL || e->rmask == 0);
    int new_w = wr && (e == NULL || e->wmask == 0);
    uint64_t set = l1_set(m, line);
    /* a sibling on the core halves the write set and shares the set's ways (htm.py) */
    int sib = m->cfg.sib[tid];
    uint32_t ways = h->setcount[set];
    uint32_t wlimit = m->cfg.htm_write_lines;
    if (sib >= 0) {
        wlimit /= 2;
        if (m->htm[sib].state == HTM_LIVE && m->htm[sib].setcount != NULL)
            ways += m->htm[sib].setcount[set];
    }
    if ((new_r && h->nread >= m->cfg.htm_read_lines)
        || (new_w && (h->nwritten >= wlimit || ways >= m->cfg.l1_ways))) {
        htm_doom(m, tid, XABORT_CAPACITY);
        return 0;
    }
    if (e == NULL) {
        uint32_t k = h->nlines++;
        e = &h->lines[k];
        e->line = line;
        e->rmask = e->wmask = e->dmask = 0;
        htm_index_insert(h, k);
    }
    if (rd) {
        h->nread += (uint32_t)new_r;
        e->rmask |= bit;
    }
    if (wr) {
        if (new_w) {
            h->written[h->nwritten++] = (uint32_t)(e - h->lines);
            h->setcount[set] += 1;
        }
        e->wmask |= bit;
    }
    return 1;
}

/* Abort every other live transaction the access conflicts with (requester wins). */
static void htm_conflicts(pm_machine *m, int tid, uint64_t line, uint8_t bit, int kind)
{
    for (int u = 0; u < m->cfg.cores; u++) {
        const htm_tx *h = &m->htm[u];
        if (u == tid || h->state != HTM_LIVE)
            continue;
        const htm_line *e = htm_find(h, line);
        if (e == NULL)
            continue;
        uint8_t mask = kind == ACC_READ || kind == ACC_CLEAN ? e->wmask
                                                             : (uint8_t)(e->wmask | e->rmask);
        if (!mask)
            continue;
        htm_doom(m, u, XABORT_CONFLICT | XABORT_RETRY);
        if (!(mask & bit))
            m->st[u].htm_false_sharing += 1;
    }
}

/* Track and check an access (HtmState.access): MODE_*, or -PM_ERR_NOMEM with nothing
   changed. Called only while some thread is in a transaction. */
static int htm_access(pm_machine *m, int tid, uint64_t addr, int kind)
{
    htm_tx *h = &m->htm[tid];
    int s = h->state;
    if (s == HTM_DOOMED)
        return MODE_SKIP;
    uint64_t line = addr >> LINE_SHIFT;
    for (uint32_t i = 0; i < m->htm_nexempt; i++)
        if (m->htm_exempt[i] == line)
            return MODE_PLAIN;
    uint8_t bit = kind >= ACC_CLEAN ? 0xFF : (uint8_t)(1u << ((addr >> 3) & 7));
    if (s == HTM_LIVE) {
        if (kind >= ACC_CLEAN) {
            const htm_line *e = m->cfg.htm_any_flush ? NULL : htm_find(h, line);
            if (m->cfg.htm_any_flush || (e != NULL && e->wmask)) {
                htm_doom(m, tid, XABORT_FLUSH);
                return MODE_SKIP;
            }
        } else {
            int err = htm_reserve(m, h);
            if (err)
                return -err;
            if (!htm_track(m, tid, line, bit, kind != ACC_WRITE, kind != ACC_READ))
                return MODE_SKIP;
        }
    }
    if (m->htm_live > (s == HTM_LIVE ? 1 : 0))
        htm_conflicts(m, tid, line, bit, kind);
    return s == HTM_LIVE && kind < ACC_CLEAN ? MODE_TX : MODE_PLAIN;
}

/* The live transaction's buffered word at addr (its line is in the sets), if any. */
static inline int htm_buffered(const pm_machine *m, int tid, uint64_t addr, uint64_t *value)
{
    const htm_line *e = htm_find(&m->htm[tid], addr >> LINE_SHIFT);
    unsigned j = (unsigned)(addr >> 3) & 7;
    if (e == NULL || !((e->dmask >> j) & 1))
        return 0;
    *value = e->words[j];
    return 1;
}

static inline void htm_buffer(pm_machine *m, int tid, uint64_t addr, uint64_t value)
{
    htm_line *e = htm_find(&m->htm[tid], addr >> LINE_SHIFT);
    unsigned j = (unsigned)(addr >> 3) & 7;
    e->words[j] = value;
    e->dmask |= (uint8_t)(1u << j);
}

/* The access mode of an instruction, or an error (as a negative number). */
#define HTM_MODE(m, tid, addr, kind)                                 \
    int mode = MODE_PLAIN;                                           \
    if ((m)->htm_active) {                                           \
        mode = htm_access((m), (tid), (addr), (kind));               \
        if (mode < 0)                                                \
            return -mode;                                            \
    }

/* ---- instructions -------------------------------------------------------------------- */

/* Validate an access: the address (checked first, as the reference does) and the thread. */
#define CHECK_ACCESS(m, tid, addr, word, pm)              \
    uint64_t *word = locate((m), (addr), &(pm));          \
    if (word == NULL)                                     \
        return PM_ERR_ADDR;                               \
    if (bad_tid((m), (tid)))                              \
        return PM_ERR_TID;                                \
    if (reserve(m))                                       \
        return PM_ERR_NOMEM

static inline int do_load(pm_machine *m, int tid, uint64_t addr, uint64_t *out)
{
    int pm;
    CHECK_ACCESS(m, tid, addr, w, pm);
    HTM_MODE(m, tid, addr, ACC_READ);
    if (mode == MODE_SKIP) {
        *out = 0;
        return 0;
    }
    pm_stats *st = &m->st[tid];
    if (m->cfg.timed) {
        int level;
        st->time_ns += mem_access(m, tid, addr >> LINE_SHIFT, 0, st->time_ns, &level);
        m->lag[tid] = 0.0;
    }
    st->loads += 1;
    if (mode == MODE_TX && htm_buffered(m, tid, addr, out))
        return 0;
    *out = *w;
    return 0;
}

/* Independent loads (PyEngine.load_many): addrs[i * stride] for i < n. Every address and the
   thread are checked first; on an error *bad is the index of the offending address and
   nothing has run. */
static int do_load_many(pm_machine *m, int tid, const uint64_t *addrs, size_t stride, size_t n,
                        uint64_t *out, size_t *bad, int values)
{
    for (size_t i = 0; i < n; i++) {
        int pm;
        *bad = i;
        if (locate(m, addrs[i * stride], &pm) == NULL)
            return PM_ERR_ADDR;
        if (bad_tid(m, tid))
            return PM_ERR_TID;
    }
    if (!m->cfg.timed || !m->cfg.ooo) {
        for (size_t i = 0; values && i < n; i++) {
            *bad = i;
            int err = do_load(m, tid, addrs[i * stride], &out[i]);
            if (err)
                return err;
        }
        return 0;
    }
    pm_stats *st = &m->st[tid];
    double issue = m->cfg.load_issue_ns;
    double *ring = &m->lf_ring[(size_t)tid * m->cfg.lf_entries];
    double t = st->time_ns, end = t;
    for (size_t i = 0; i < n; i++) {
        uint64_t addr = addrs[i * stride];
        int pm;
        uint64_t *w = locate(m, addr, &pm);
        *bad = i;
        if (reserve(m))
            return PM_ERR_NOMEM;
        int mode = MODE_PLAIN;
        if (values && m->htm_active) {
            mode = htm_access(m, tid, addr, ACC_READ);
            if (mode < 0)
                return -mode;
            if (mode == MODE_SKIP) {
                out[i] = 0;
                continue;
            }
        }
        int level;
        uint32_t j = m->lf_idx[tid];
        double start = ring[j] > t ? ring[j] : t; /* a miss waits for the oldest fill buffer */
        double lat = mem_access(m, tid, addr >> LINE_SHIFT, 0, start, &level);
        double done;
        if (level == 1) {
            done = t + lat;
        } else {
            done = start + lat;
            ring[j] = done;
            m->lf_idx[tid] = (j + 1) % m->cfg.lf_entries;
        }
        if (done > end)
            end = done;
        t += issue;
        if (!values)
            continue;
        st->loads += 1;
        if (mode == MODE_TX && htm_buffered(m, tid, addr, &out[i]))
            continue;
        out[i] = *w;
    }
    if (t > end)
        end = t;
    if (end > st->time_ns)
        st->time_ns = end;
    m->lag[tid] = 0.0;
    return 0;
}

/* A transactional store (or movnt): timed like a store, the value buffered. */
static int tx_store(pm_machine *m, int tid, uint64_t addr, uint64_t value, uint64_t *counter)
{
    pm_stats *st = &m->st[tid];
    if (m->cfg.timed) {
        if (m->cfg.ooo) {
            sb_store(m, tid, addr >> LINE_SHIFT, 2);
        } else {
            int level;
            double lat = mem_access(m, tid, addr >> LINE_SHIFT, 2, st->time_ns, &level);
            st->time_ns += level == 1 ? m->cfg.store_ns : lat;
        }
    }
    *counter += 1;
    htm_buffer(m, tid, addr, value);
    return 0;
}

static inline int do_store(pm_machine *m, int tid, uint64_t addr, uint64_t value)
{
    int pm;
    CHECK_ACCESS(m, tid, addr, w, pm);
    HTM_MODE(m, tid, addr, ACC_WRITE);
    if (mode != MODE_PLAIN)
        return mode == MODE_TX ? tx_store(m, tid, addr, value, &m->st[tid].stores) : 0;
    pm_stats *st = &m->st[tid];
    m->wc[tid] = 0;
    if (m->cfg.timed) {
        if (m->cfg.ooo) {
            sb_store(m, tid, addr >> LINE_SHIFT, 1);
        } else {
            int level;
            double lat = mem_access(m, tid, addr >> LINE_SHIFT, 1, st->time_ns, &level);
            st->time_ns += level == 1 ? m->cfg.store_ns : lat;
        }
    }
    st->stores += 1;
    *w = value;
    if (pm)
        emit(m, EV_STORE, tid, 0, addr, value);
    return 0;
}

static int do_ntstore(pm_machine *m, int tid, uint64_t addr, uint64_t value)
{
    int pm;
    CHECK_ACCESS(m, tid, addr, w, pm);
    HTM_MODE(m, tid, addr, ACC_WRITE);
    if (mode != MODE_PLAIN) /* movnt inside a transaction is a transactional store */
        return mode == MODE_TX ? tx_store(m, tid, addr, value, &m->st[tid].ntstores) : 0;
    pm_stats *st = &m->st[tid];
    if (!m->cfg.timed) {
        st->ntstores += 1;
        *w = value;
        if (pm)
            emit(m, EV_NTSTORE, tid, 0, addr, value);
        return 0;
    }
    uint64_t line = addr >> LINE_SHIFT;
    int combined = pm && m->wc[tid] == line + 1; /* joins the open write-combining buffer */
    if (!combined)
        flush_line(m, tid, line, 1, WB_NT, st->time_ns);
    st->time_ns += m->cfg.store_ns;
    st->ntstores += 1;
    *w = value;
    if (pm) {
        emit(m, EV_NTSTORE, tid, 0, addr, value);
        if (!combined) {
            double arrive = st->time_ns + m->cfg.to_wpq_ns;
            double accept = wpq_insert(m, tid, arrive, line, NULL);
            if (accept > m->pending[tid])
                m->pending[tid] = accept;
            m->wc[tid] = line + 1;
        }
    } else {
        st->dram_write_bytes += 8;
    }
    return 0;
}

static int do_flush(pm_machine *m, int tid, uint64_t addr, int kind)
{
    int pm;
    CHECK_ACCESS(m, tid, addr & ~(uint64_t)7, w, pm);
    (void)w;
    HTM_MODE(m, tid, addr, kind == EV_CLWB ? ACC_CLEAN : ACC_INVAL);
    if (mode == MODE_SKIP)
        return 0;
    m->wc[tid] = 0;
    uint64_t line = addr >> LINE_SHIFT;
    pm_stats *st = &m->st[tid];
    if (m->cfg.timed)
        st->time_ns += m->cfg.flush_ns;
    if (kind == EV_CLFLUSH)
        st->clflush += 1;
    else if (kind == EV_CLFLUSHOPT)
        st->clflushopt += 1;
    else
        st->clwb += 1;
    if (pm)
        emit(m, kind, tid, 0, line << LINE_SHIFT, 0);
    if (!m->cfg.timed)
        return 0;
    double accept = flush_line(m, tid, line, kind != EV_CLWB, WB_FLUSH, sb_after(m, tid));
    if (accept < 0.0)
        return 0;
    if (kind == EV_CLFLUSH) {
        if (accept > st->time_ns)
            st->time_ns = accept;
    } else if (accept > m->pending[tid]) {
        m->pending[tid] = accept;
    }
    return 0;
}

/* Wait for this thread's store buffer (ooo), outstanding flushes and a pending pcommit (in a
   'fixed' persist barrier the barrier's cost stands for all of it). */
static void fence_wait(pm_machine *m, int tid)
{
    double target = m->pending[tid];
    if (m->pcommit_wait[tid] > target)
        target = m->pcommit_wait[tid];
    m->wc[tid] = 0;
    m->pending[tid] = 0.0;
    m->pcommit_wait[tid] = 0.0;
    if (m->in_fixed_pb[tid])
        return;
    sb_drain(m, tid);
    pm_stats *st = &m->st[tid];
    double wait = target - st->time_ns;
    if (wait > 0.0) {
        st->time_ns += wait;
        st->barrier_stall_ns += wait;
    }
}

static int do_fence(pm_machine *m, int tid, int kind)
{
    if (bad_tid(m, tid))
        return PM_ERR_TID;
    if (reserve(m))
        return PM_ERR_NOMEM;
    pm_stats *st = &m->st[tid];
    if (m->cfg.timed) {
        if (!m->in_fixed_pb[tid])
            st->time_ns += m->cfg.fence_ns;
        double before = st->time_ns;
        fence_wait(m, tid);
        if (kind == EV_MFENCE)
            m->lag[tid] = 0.0;
        else if (m->cfg.ooo) /* the window fills behind the fence while it waits */
            m->lag[tid] = st->time_ns - before;
    }
    if (kind == EV_SFENCE)
        st->sfence += 1;
    else
        st->mfence += 1;
    emit(m, kind, tid, 0, 0, 0);
    return 0;
}

static int do_pcommit(pm_machine *m, int tid)
{
    if (bad_tid(m, tid))
        return PM_ERR_TID;
    if (reserve(m))
        return PM_ERR_NOMEM;
    pm_stats *st = &m->st[tid];
    m->wc[tid] = 0;
    st->pcommit += 1;
    if (!m->cfg.timed) {
        emit(m, EV_PCOMMIT, tid, 0, 0, 0);
        return 0;
    }
    if (!m->in_fixed_pb[tid])
        st->time_ns += m->cfg.pcommit_ns;
    if (m->cfg.domain == 0) {
        const double *free_at = m->cfg.dimms ? m->chan_free : m->bank_free;
        uint32_t nfree = m->cfg.dimms ? m->cfg.dimms : m->cfg.banks;
        double drain = free_at[0];
        for (uint32_t i = 1; i < nfree; i++)
            if (free_at[i] > drain)
                drain = free_at[i];
        if (drain > m->pcommit_wait[tid])
            m->pcommit_wait[tid] = drain;
    }
    emit(m, EV_PCOMMIT, tid, 0, 0, 0);
    return 0;
}

static int do_rmw(pm_machine *m, int tid, uint64_t addr, int has_expected, uint64_t expected,
                  uint64_t value, uint64_t *old_out)
{
    int pm;
    CHECK_ACCESS(m, tid, addr, w, pm);
    HTM_MODE(m, tid, addr, ACC_RMW);
    if (mode == MODE_SKIP) {
        *old_out = 0;
        return 0;
    }
    pm_stats *st = &m->st[tid];
    if (m->cfg.timed) {
        st->time_ns += m->cfg.rmw_ns;
        fence_wait(m, tid);
        m->lag[tid] = 0.0;
        int level;
        st->time_ns += mem_access(m, tid, addr >> LINE_SHIFT, mode == MODE_TX ? 2 : 1,
                                  st->time_ns, &level);
    }
    st->rmws += 1;
    if (mode == MODE_TX) {
        uint64_t old;
        if (!htm_buffered(m, tid, addr, &old))
            old = *w;
        if (!has_expected || old == expected)
            htm_buffer(m, tid, addr, value);
        *old_out = old;
        return 0;
    }
    uint64_t old = *w;
    int stored = !has_expected || old == expected;
    if (stored)
        *w = value;
    if (pm)
        emit(m, EV_RMW, tid, (uint32_t)stored, addr, stored ? value : old);
    else
        emit(m, EV_RMW, tid, 0, 0, 0);
    *old_out = old;
    return 0;
}

/* The most one work() may charge, in ns (reference.MAX_WORK_NS). */
#define PM_MAX_WORK_NS 1e12

static inline int do_work(pm_machine *m, int tid, double ns)
{
    if (bad_tid(m, tid))
        return PM_ERR_TID;
    if (!(ns >= 0.0 && ns <= PM_MAX_WORK_NS)) /* also rejects NaN */
        return PM_ERR_VALUE;
    if (!m->cfg.timed)
        return 0;
    pm_stats *st = &m->st[tid];
    ns *= m->work_scale[tid];
    st->time_ns += ns;
    m->lag[tid] = 0.0;
    st->work_ns += ns;
    return 0;
}

static int do_mark(pm_machine *m, int tid, uint32_t code, uint64_t value)
{
    if (bad_tid(m, tid))
        return PM_ERR_TID;
    if (reserve(m))
        return PM_ERR_NOMEM;
    emit(m, EV_MARK, tid, code, 0, value);
    return 0;
}

static int do_persist_barrier(pm_machine *m, int tid)
{
    if (bad_tid(m, tid))
        return PM_ERR_TID;
    if (reserve(m))
        return PM_ERR_NOMEM;
    pm_stats *st = &m->st[tid];
    st->persist_barriers += 1;
    int fixed = m->cfg.fixed_barrier && m->cfg.timed;
    if (fixed)
        m->in_fixed_pb[tid] = 1;
    if (m->cfg.domain == 0) {
        do_fence(m, tid, EV_SFENCE);
        do_pcommit(m, tid);
        do_fence(m, tid, EV_SFENCE);
    } else if (m->cfg.domain == 1) {
        do_fence(m, tid, EV_SFENCE);
    }
    if (fixed) {
        m->in_fixed_pb[tid] = 0;
        st->time_ns += m->cfg.barrier_ns;
        st->barrier_stall_ns += m->cfg.barrier_ns;
    }
    return 0;
}

static int do_xbegin(pm_machine *m, int tid)
{
    if (bad_tid(m, tid))
        return PM_ERR_TID;
    htm_tx *h = &m->htm[tid];
    if (h->state != HTM_NONE)
        return PM_ERR_HTM;
    h->state = HTM_LIVE;
    m->htm_active++;
    m->htm_live++;
    m->st[tid].htm_begins += 1;
    if (m->cfg.timed) {
        sb_drain(m, tid);
        m->lag[tid] = 0.0;
        m->st[tid].time_ns += m->cfg.xbegin_ns;
    }
    return 0;
}

static inline int popcount8(uint8_t x)
{
    int n = 0;
    for (; x; x &= (uint8_t)(x - 1))
        n++;
    return n;
}

/* Commit a live transaction (*out = 0) or end a doomed one (*out = its abort status). */
static int do_xend(pm_machine *m, int tid, uint64_t *out)
{
    if (bad_tid(m, tid))
        return PM_ERR_TID;
    htm_tx *h = &m->htm[tid];
    pm_stats *st = &m->st[tid];
    if (h->state == HTM_NONE)
        return PM_ERR_HTM;
    if (h->state == HTM_DOOMED) {
        if (m->cfg.timed) {
            sb_drain(m, tid);
            m->lag[tid] = 0.0;
            st->time_ns += m->cfg.xabort_ns;
        }
        *out = h->status;
        h->state = HTM_NONE;
        h->status = 0;
        m->htm_active--;
        return 0;
    }
    size_t words = 0;
    for (uint32_t k = 0; k < h->nwritten; k++)
        words += (size_t)popcount8(h->lines[h->written[k]].dmask);
    if (reserve_n(m, words + (size_t)EVENTS_PER_OP * h->nwritten))
        return PM_ERR_NOMEM;
    if (m->cfg.timed) {
        sb_drain(m, tid);
        m->lag[tid] = 0.0;
        st->time_ns += m->cfg.xend_ns;
    }
    st->htm_commits += 1;
    for (uint32_t k = 0; k < h->nwritten; k++) {
        const htm_line *e = &h->lines[h->written[k]];
        for (unsigned j = 0; j < 8; j++) {
            if (!((e->dmask >> j) & 1))
                continue;
            uint64_t addr = (e->line << LINE_SHIFT) | ((uint64_t)j << 3);
            int pm;
            uint64_t *w = locate(m, addr, &pm);
            *w = e->words[j];
            if (pm)
                emit(m, EV_STORE, tid, 0, addr, e->words[j]);
        }
    }
    if (m->cfg.timed) {
        for (uint32_t k = 0; k < h->nwritten; k++) {
            const htm_line *e = &h->lines[h->written[k]];
            if (!e->dmask)
                continue;
            uint64_t *p = cache_lookup(L1(m, tid), e->line);
            if (p != NULL) {
                *p |= 1;
            } else { /* evicted from L1 during the transaction: take it again */
                int level;
                st->time_ns += mem_access(m, tid, e->line, 1, st->time_ns, &level);
            }
        }
    }
    htm_clear(m, h);
    h->state = HTM_NONE;
    m->htm_active--;
    m->htm_live--;
    *out = 0;
    return 0;
}

static int do_xabort(pm_machine *m, int tid, uint32_t code)
{
    if (bad_tid(m, tid))
        return PM_ERR_TID;
    if (code > 0xFF)
        return PM_ERR_VALUE;
    if (m->htm[tid].state == HTM_LIVE)
        htm_doom(m, tid, XABORT_EXPLICIT | code << 24);
    return 0;
}

static inline uint64_t htm_status(const pm_machine *m, int tid)
{
    return m->htm[tid].state == HTM_DOOMED ? m->htm[tid].status : 0;
}

/* The TSC: (clock + skew) * tsc_ghz truncated, clamped to 0..UINT64_MAX (reference.tsc). */
static int do_rdtsc(pm_machine *m, int tid, uint64_t *out)
{
    if (bad_tid(m, tid))
        return PM_ERR_TID;
    pm_stats *st = &m->st[tid];
    if (m->cfg.timed)
        st->time_ns += m->cfg.rdtsc_ns;
    double t = (st->time_ns + m->cfg.tsc_skew[tid]) * m->cfg.tsc_ghz;
    if (!(t >= 0.0))
        *out = 0;
    else if (t >= 18446744073709551616.0)
        *out = UINT64_MAX;
    else
        *out = (uint64_t)t;
    return 0;
}

static void htm_free(htm_tx *h)
{
    free(h->lines);
    free(h->written);
    free(h->index);
    free(h->setcount);
}

/* reference.dimm_seed: the machine's seed mixed with the DIMM's index, never 0 */
static uint64_t dimm_seed(uint64_t seed, uint32_t d)
{
    uint64_t x = seed ^ (UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(d + 1));
    return x ? x : 1;
}

/* The WPQ rings, the cores' buffers, the prefetchers and the DIMMs as after power-on. */
static void timing_reset(pm_machine *m)
{
    const pm_config *c = &m->cfg;
    size_t n = (size_t)c->cores, nd = m->ndimm;
    memset(m->ring_head, 0, nd * sizeof(uint32_t));
    memset(m->ring_len, 0, nd * sizeof(uint32_t));
    memset(m->ring_gone, 0, nd * sizeof(double));
    memset(m->bank_head, 0, c->banks * sizeof(uint32_t));
    memset(m->bank_len, 0, c->banks * sizeof(uint32_t));
    memset(m->bank_gone, 0, c->banks * sizeof(double));
    memset(m->bank_free, 0, c->banks * sizeof(double));
    memset(m->sb_ring, 0, n * c->sb_entries * sizeof(double));
    memset(m->sb_idx, 0, n * sizeof(uint32_t));
    memset(m->sb_last, 0, n * sizeof(double));
    memset(m->lag, 0, n * sizeof(double));
    memset(m->lf_ring, 0, n * c->lf_entries * sizeof(double));
    memset(m->lf_idx, 0, n * sizeof(uint32_t));
    for (size_t i = 0; i < n * c->pf_streams; i++) {
        int64_t *e = &m->pf_streams[4 * i];
        e[0] = -1;
        e[1] = e[2] = e[3] = 0;
    }
    for (size_t i = 0; i < n * m->pf_slots; i++) {
        m->pf_line[i] = -1;
        m->pf_ready[i] = 0.0;
    }
    for (size_t i = 0; i < nd * c->xpb_lines; i++) {
        m->xpb_line[i] = -1;
        m->xpb_mask[i] = 0;
        m->xpb_busy[i] = 0.0;
        m->xpb_open[i] = 0.0;
        m->xpb_shut[i] = 0.0;
        m->xpb_seq[i] = 0;
        m->xpb_from[i] = 0;
        m->xpb_tid[i] = -1;
    }
    for (size_t i = 0; i < nd * PM_ALLOC_RING; i++)
        m->alloc_t[i] = -1.0;
    for (size_t i = 0; i < nd * c->cores; i++)
        m->dimm_last[i] = 0.0;
    for (size_t i = 0; i < (size_t)c->cores * PM_WRITE_RING; i++) {
        m->tw_t[i] = -1.0;
        m->tw_d[i] = 0;
        m->tr_a[i] = -1.0;
        m->tr_c[i] = -1.0;
        m->tr_d[i] = 0;
    }
    for (int t = 0; t < c->cores; t++) {
        m->tw_n[t] = 0;
        m->tr_n[t] = 0;
    }
    m->cw_on = c->contention > 0.0 && (uint32_t)c->cores > c->combine_writers;
    m->cr_on = c->read_contention > 0.0 && (uint32_t)c->cores > c->combine_writers;
    for (uint32_t d = 0; d < nd; d++) {
        m->alloc_n[d] = 0;
        m->xpb_fill[d] = 0;
        m->rng[d] = dimm_seed(c->seed, d);
        m->chan_free[d] = 0.0;
    }
    for (size_t i = 0; i < 3 * (size_t)c->dimms * PM_CAL_BUCKETS; i++) {
        m->cal_tag[i] = -1;
        m->cal_used[i] = 0.0;
    }
}

/* ---- public entry points ------------------------------------------------------------- */

pm_machine *pm_machine_new(const pm_config *cfg, const uint64_t *bases, const uint64_t *sizes,
                           uint64_t **words)
{
    pm_machine *m = calloc(1, sizeof(pm_machine));
    if (m == NULL)
        return NULL;
    m->cfg = *cfg;
    int n = cfg->cores;
    uint32_t r = cfg->nregions;
    int p = (int)cfg->ncaches; /* physical cores, CoreConfig.placement */
    m->ncaches = p;
    m->work_scale = calloc((size_t)n, sizeof(double));
    if (m->work_scale)
        for (int t = 0; t < n; t++)
            m->work_scale[t] = cfg->sib[t] >= 0 ? 1.0 / cfg->smt_speed : 1.0;
    m->l1 = calloc((size_t)p, sizeof(cache));
    m->l2 = calloc((size_t)p, sizeof(cache));
    m->st = calloc((size_t)n, sizeof(pm_stats));
    m->pending = calloc((size_t)n, sizeof(double));
    m->pcommit_wait = calloc((size_t)n, sizeof(double));
    m->in_fixed_pb = calloc((size_t)n, 1);
    m->wc = calloc((size_t)n, sizeof(uint64_t));
    m->ndimm = cfg->dimms ? cfg->dimms : 1;
    size_t nd = m->ndimm, nring = ((size_t)cfg->wpq_entries + PM_WPQ_LOOKBACK + 1) * nd;
    size_t nbank = (size_t)cfg->banks * (PM_BANK_RING + 1);
    m->ring_arr = calloc(nring, sizeof(double));
    m->ring = calloc(nring, sizeof(double));
    m->ring_start = calloc(nring, sizeof(double));
    m->ring_line = calloc(nring, sizeof(uint64_t));
    m->ring_head = calloc(nd, sizeof(uint32_t));
    m->ring_len = calloc(nd, sizeof(uint32_t));
    m->ring_gone = calloc(nd, sizeof(double));
    m->bank_s = calloc(nbank, sizeof(double));
    m->bank_e = calloc(nbank, sizeof(double));
    m->bank_head = calloc(cfg->banks, sizeof(uint32_t));
    m->bank_len = calloc(cfg->banks, sizeof(uint32_t));
    m->bank_gone = calloc(cfg->banks, sizeof(double));
    m->bank_free = calloc(cfg->banks, sizeof(double));
    m->sb_ring = calloc((size_t)n * cfg->sb_entries, sizeof(double));
    m->sb_idx = calloc((size_t)n, sizeof(uint32_t));
    m->sb_last = calloc((size_t)n, sizeof(double));
    m->lag = calloc((size_t)n, sizeof(double));
    m->lf_ring = calloc((size_t)n * cfg->lf_entries, sizeof(double));
    m->lf_idx = calloc((size_t)n, sizeof(uint32_t));
    m->pf_slots = 1;
    while (m->pf_slots < 2 * cfg->pf_distance + 2)
        m->pf_slots <<= 1;
    m->pf_streams = calloc((size_t)n * cfg->pf_streams * 4, sizeof(int64_t));
    m->pf_line = calloc((size_t)n * m->pf_slots, sizeof(int64_t));
    m->pf_ready = calloc((size_t)n * m->pf_slots, sizeof(double));
    m->xpb_line = calloc(nd * cfg->xpb_lines, sizeof(int64_t));
    m->xpb_mask = calloc(nd * cfg->xpb_lines, 1);
    m->xpb_busy = calloc(nd * cfg->xpb_lines, sizeof(double));
    m->xpb_open = calloc(nd * cfg->xpb_lines, sizeof(double));
    m->xpb_shut = calloc(nd * cfg->xpb_lines, sizeof(double));
    m->xpb_seq = calloc(nd * cfg->xpb_lines, sizeof(uint64_t));
    m->xpb_from = calloc(nd * cfg->xpb_lines, sizeof(uint64_t));
    m->xpb_tid = calloc(nd * cfg->xpb_lines, sizeof(int32_t));
    m->alloc_t = calloc(nd * PM_ALLOC_RING, sizeof(double));
    m->alloc_n = calloc(nd, sizeof(uint64_t));
    m->dimm_last = calloc(nd * cfg->cores, sizeof(double));
    m->tw_t = calloc((size_t)cfg->cores * PM_WRITE_RING, sizeof(double));
    m->tw_d = calloc((size_t)cfg->cores * PM_WRITE_RING, sizeof(uint32_t));
    m->tw_n = calloc((size_t)cfg->cores, sizeof(uint64_t));
    m->tr_a = calloc((size_t)cfg->cores * PM_WRITE_RING, sizeof(double));
    m->tr_c = calloc((size_t)cfg->cores * PM_WRITE_RING, sizeof(double));
    m->tr_d = calloc((size_t)cfg->cores * PM_WRITE_RING, sizeof(uint32_t));
    m->tr_n = calloc((size_t)cfg->cores, sizeof(uint64_t));
    m->xpb_fill = calloc(nd, sizeof(uint32_t));
    m->rng = calloc(nd, sizeof(uint64_t));
    m->chan_free = calloc(nd, sizeof(double));
    /* calendars only with the DIMM model (one bucket otherwise: calloc(0) may be NULL) */
    size_t ncal = cfg->dimms ? 3 * (size_t)cfg->dimms * PM_CAL_BUCKETS : 1;
    m->cal_tag = calloc(ncal, sizeof(int64_t));
    m->cal_used = calloc(ncal, sizeof(double));
    {
        double w = cfg->media_read_occ_ns;
        if (cfg->media_write_ns > w)
            w = cfg->media_write_ns;
        if (cfg->pm_write_ns > w)
            w = cfg->pm_write_ns;
        if (1.0 > w)
            w = 1.0;
        m->cal_w = 2.0 * w;
    }
    m->rbase = calloc(r, sizeof(uint64_t));
    m->rend = calloc(r, sizeof(uint64_t));
    m->rwords = calloc(r, sizeof(uint64_t *));
    m->htm = calloc((size_t)n, sizeof(htm_tx));
    m->tcap = TRACE_INITIAL;
    m->tr = malloc(m->tcap * sizeof(pm_event));
    int ok = m->l1 && m->l2 && m->work_scale && m->st && m->pending && m->pcommit_wait
             && m->in_fixed_pb && m->wc
             && m->ring_arr && m->ring && m->ring_start && m->ring_line && m->ring_head
             && m->ring_len && m->ring_gone && m->bank_s && m->bank_e && m->bank_head
             && m->bank_len && m->bank_gone && m->bank_free && m->rbase
             && m->rend && m->rwords && m->tr && m->htm && m->sb_ring && m->sb_idx && m->sb_last
             && m->lag
             && m->lf_ring && m->lf_idx && m->pf_streams && m->pf_line
             && m->pf_ready && m->xpb_line && m->xpb_mask && m->xpb_busy
             && m->xpb_open && m->xpb_shut && m->xpb_seq && m->xpb_from && m->xpb_tid
             && m->alloc_t && m->alloc_n && m->dimm_last
             && m->tw_t && m->tw_d && m->tw_n && m->tr_a && m->tr_c && m->tr_d && m->tr_n
             && m->xpb_fill && m->rng && m->chan_free && m->cal_tag && m->cal_used;
    ok = ok && cache_init(&m->llc, cfg->llc_sets, cfg->llc_ways);
    for (int i = 0; ok && i < p; i++)
        ok = cache_init(&m->l1[i], cfg->l1_sets, cfg->l1_ways)
             && cache_init(&m->l2[i], cfg->l2_sets, cfg->l2_ways);
    if (!ok) {
        pm_machine_free(m);
        return NULL;
    }
    for (uint32_t i = 0; i < r; i++) {
        m->rbase[i] = bases[i];
        m->rend[i] = bases[i] + sizes[i];
        m->rwords[i] = words[i];
    }
    m->pm_base = m->rbase[cfg->pm_index];
    m->pm_end = m->rend[cfg->pm_index];
    timing_reset(m);
    return m;
}

void pm_machine_free(pm_machine *m)
{
    if (m == NULL)
        return;
    for (int i = 0; i < m->cfg.cores; i++) {
        if (m->l1 && i < m->ncaches)
            cache_free(&m->l1[i]);
        if (m->l2 && i < m->ncaches)
            cache_free(&m->l2[i]);
        if (m->htm)
            htm_free(&m->htm[i]);
    }
    cache_free(&m->llc);
    free(m->l1);
    free(m->l2);
    free(m->work_scale);
    free(m->st);
    free(m->pending);
    free(m->wc);
    free(m->pcommit_wait);
    free(m->in_fixed_pb);
    free(m->ring_arr);
    free(m->ring);
    free(m->ring_start);
    free(m->ring_line);
    free(m->ring_head);
    free(m->ring_len);
    free(m->ring_gone);
    free(m->bank_s);
    free(m->bank_e);
    free(m->bank_head);
    free(m->bank_len);
    free(m->bank_gone);
    free(m->bank_free);
    free(m->sb_ring);
    free(m->sb_idx);
    free(m->sb_last);
    free(m->lag);
    free(m->lf_ring);
    free(m->lf_idx);
    free(m->pf_streams);
    free(m->pf_line);
    free(m->pf_ready);
    free(m->xpb_line);
    free(m->xpb_mask);
    free(m->xpb_busy);
    free(m->xpb_open);
    free(m->xpb_shut);
    free(m->xpb_seq);
    free(m->xpb_from);
    free(m->xpb_tid);
    free(m->alloc_t);
    free(m->tw_t);
    free(m->tw_d);
    free(m->tw_n);
    free(m->tr_a);
    free(m->tr_c);
    free(m->tr_d);
    free(m->tr_n);
    free(m->alloc_n);
    free(m->dimm_last);
    free(m->xpb_fill);
    free(m->rng);
    free(m->chan_free);
    free(m->cal_tag);
    free(m->cal_used);
    free(m->rbase);
    free(m->rend);
    free(m->rwords);
    free(m->tr);
    free(m->htm);
    free(m);
}

void pm_trace_reset(pm_machine *m)
{
    m->tlen = 0;
    if (m->tcap > TRACE_INITIAL) {
        pm_event *t = realloc(m->tr, TRACE_INITIAL * sizeof(pm_event));
        if (t != NULL) {
            m->tr = t;
            m->tcap = TRACE_INITIAL;
        }
    }
}

void pm_reset_volatile(pm_machine *m)
{
    int n = m->cfg.cores;
    for (int i = 0; i < m->ncaches; i++) {
        cache_clear(&m->l1[i]);
        cache_clear(&m->l2[i]);
    }
    cache_clear(&m->llc);
    memset(m->st, 0, (size_t)n * sizeof(pm_stats));
    memset(m->pending, 0, (size_t)n * sizeof(double));
    memset(m->pcommit_wait, 0, (size_t)n * sizeof(double));
    memset(m->in_fixed_pb, 0, (size_t)n);
    memset(m->wc, 0, (size_t)n * sizeof(uint64_t));
    timing_reset(m);
    m->err = 0;
    for (int i = 0; i < n; i++) {
        htm_clear(m, &m->htm[i]);
        m->htm[i].state = HTM_NONE;
        m->htm[i].status = 0;
    }
    m->htm_active = m->htm_live = 0;
    pm_trace_reset(m);
    for (uint32_t i = 0; i < m->cfg.nregions; i++)
        if (i != m->cfg.pm_index)
            memset(m->rwords[i], 0, (size_t)(m->rend[i] - m->rbase[i]));
}

int pm_error(const pm_machine *m)
{
    return m->err;
}

uint64_t pm_load(pm_machine *m, int tid, uint64_t addr)
{
    uint64_t v = UINT64_MAX;
    m->err = do_load(m, tid, addr, &v);
    return v;
}

int pm_load_many(pm_machine *m, int tid, const uint64_t *addrs, size_t n, uint64_t *out)
{
    size_t bad;
    return do_load_many(m, tid, addrs, 1, n, out, &bad, 1);
}

int pm_load_words(pm_machine *m, int tid, uint64_t addr, size_t n, uint64_t *out)
{
    uint64_t local[64] = {0};
    uint64_t *addrs = n <= 64 ? local : malloc(n * sizeof *addrs);
    if (addrs == NULL)
        return PM_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        addrs[i] = addr + 8 * i;
    size_t bad;
    int code = do_load_many(m, tid, addrs, 1, n, out, &bad, 1);
    if (addrs != local)
        free(addrs);
    return code;
}

int pm_run_ahead(pm_machine *m, int tid, const uint64_t *addrs, size_t n)
{
    size_t bad;
    return do_load_many(m, tid, addrs, 1, n, NULL, &bad, 0);
}

int pm_store(pm_machine *m, int tid, uint64_t addr, uint64_t value)
{
    return do_store(m, tid, addr, value);
}

int pm_store_words(pm_machine *m, int tid, uint64_t addr, const uint64_t *vals, size_t n,
                   size_t *done)
{
    for (size_t i = 0; i < n; i++) {
        int code = do_store(m, tid, addr + 8 * i, vals[i]);
        if (code) {
            *done = i;
            return code;
        }
    }
    *done = n;
    return 0;
}

int pm_clwb_many(pm_machine *m, int tid, const uint64_t *addrs, size_t n, size_t *done)
{
    for (size_t i = 0; i < n; i++) {
        int code = do_flush(m, tid, addrs[i], EV_CLWB);
        if (code) {
            *done = i;
            return code;
        }
    }
    *done = n;
    return 0;
}

int pm_ntstore(pm_machine *m, int tid, uint64_t addr, uint64_t value)
{
    return do_ntstore(m, tid, addr, value);
}

/* A write by a device beside the caches (the memory controller's log pending queue): PM
   takes the value and the trace an NTSTORE (aux 0 issued, 1 drained, 2 persisted); no time, no cache or
   WPQ work, no counters (the device's model keeps its own). */
int pm_devwrite(pm_machine *m, int tid, uint64_t addr, uint64_t value, uint32_t drained)
{
    int pm;
    CHECK_ACCESS(m, tid, addr, w, pm);
    if (!pm)
        return PM_ERR_ADDR;
    *w = value;
    emit(m, EV_NTSTORE, tid, drained > 2u ? 1u : drained, addr, value);
    return 0;
}

int pm_clflush(pm_machine *m, int tid, uint64_t addr)
{
    return do_flush(m, tid, addr, EV_CLFLUSH);
}

int pm_clflushopt(pm_machine *m, int tid, uint64_t addr)
{
    return do_flush(m, tid, addr, EV_CLFLUSHOPT);
}

int pm_clwb(pm_machine *m, int tid, uint64_t addr)
{
    return do_flush(m, tid, addr, EV_CLWB);
}

int pm_sfence(pm_machine *m, int tid)
{
    return do_fence(m, tid, EV_SFENCE);
}

int pm_mfence(pm_machine *m, int tid)
{
    return do_fence(m, tid, EV_MFENCE);
}

int pm_pcommit(pm_machine *m, int tid)
{
    return do_pcommit(m, tid);
}

uint64_t pm_cas(pm_machine *m, int tid, uint64_t addr, uint64_t expected, uint64_t value)
{
    uint64_t old = UINT64_MAX;
    m->err = do_rmw(m, tid, addr, 1, expected, value, &old);
    return old;
}

uint64_t pm_xchg(pm_machine *m, int tid, uint64_t addr, uint64_t value)
{
    uint64_t old = UINT64_MAX;
    m->err = do_rmw(m, tid, addr, 0, 0, value, &old);
    return old;
}

int pm_work(pm_machine *m, int tid, double ns)
{
    return do_work(m, tid, ns);
}

int pm_mark(pm_machine *m, int tid, uint32_t code, uint64_t value)
{
    return do_mark(m, tid, code, value);
}

int pm_persist_barrier(pm_machine *m, int tid)
{
    return do_persist_barrier(m, tid);
}

int pm_xbegin(pm_machine *m, int tid)
{
    return do_xbegin(m, tid);
}

int64_t pm_xend(pm_machine *m, int tid)
{
    uint64_t status = 0;
    int err = do_xend(m, tid, &status);
    return err ? -(int64_t)err : (int64_t)status;
}

int pm_xabort(pm_machine *m, int tid, uint32_t code)
{
    return do_xabort(m, tid, code);
}

int64_t pm_xstatus(const pm_machine *m, int tid)
{
    return bad_tid(m, tid) ? -(int64_t)PM_ERR_TID : (int64_t)htm_status(m, tid);
}

uint64_t pm_rdtsc(pm_machine *m, int tid)
{
    uint64_t v = UINT64_MAX;
    m->err = do_rdtsc(m, tid, &v);
    return v;
}

int pm_htm_exempt(pm_machine *m, uint64_t addr)
{
    int pm;
    if (locate(m, addr & ~(uint64_t)7, &pm) == NULL)
        return PM_ERR_ADDR;
    uint64_t line = addr >> LINE_SHIFT;
    for (uint32_t i = 0; i < m->htm_nexempt; i++)
        if (m->htm_exempt[i] == line)
            return 0;
    if (m->htm_nexempt >= PM_HTM_EXEMPT_MAX)
        return PM_ERR_VALUE;
    m->htm_exempt[m->htm_nexempt++] = line;
    return 0;
}

double pm_get_clock(const pm_machine *m, int tid)
{
    if (bad_tid(m, tid)) {
        double nan;
        uint64_t bits = 0x7ff8000000000000ULL;
        memcpy(&nan, &bits, sizeof nan);
        return nan;
    }
    return m->st[tid].time_ns;
}

int pm_set_clock(pm_machine *m, int tid, double t)
{
    if (bad_tid(m, tid))
        return PM_ERR_TID;
    if (!(t >= 0.0 && t < INFINITY))
        return PM_ERR_VALUE;
    m->st[tid].time_ns = t;
    m->lag[tid] = 0.0;
    return 0;
}

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

static inline void prefetch_set(const cache *c, uint64_t line)
{
    size_t base = (size_t)(line & c->mask) * c->ways;
    for (uint32_t i = 0; i < c->ways; i += 8)
        PREFETCH(c->tag + base + i);
    PREFETCH(c->meta + base);
}

/* Start loading what an upcoming access will look at (a hint only: no state changes). */
static inline void prefetch_op(const pm_machine *m, const pm_op *o)
{
    if (o->op > OP_NTSTORE && o->op != OP_CAS && o->op != OP_XCHG)
        return;
    if (o->tid >= m->cfg.cores)
        return;
    uint64_t line = o->addr >> LINE_SHIFT;
    prefetch_set(L2(m, o->tid), line);
    prefetch_set(&m->llc, line);
    if (o->addr >= m->pm_base && o->addr < m->pm_end)
        PREFETCH(m->rwords[m->cfg.pm_index] + ((o->addr - m->pm_base) >> 3));
}

enum { PREFETCH_AHEAD = 8 };

int64_t pm_run_batch(pm_machine *m, const pm_op *ops, size_t n, uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        const pm_op *o = &ops[i];
        if (i + PREFETCH_AHEAD < n)
            prefetch_op(m, &ops[i + PREFETCH_AHEAD]);
        int tid = o->tid;
        uint64_t v = 0;
        int err;
        switch (o->op) {
        case OP_LOAD:
            if (o->aux & 1) { /* an independent group: the run of such loads of this thread */
                size_t j = i + 1, bad = 0;
                while (j < n && ops[j].op == OP_LOAD && (ops[j].aux & 3) == (o->aux & 3)
                       && ops[j].tid == o->tid)
                    j++;
                err = do_load_many(m, tid, &o->addr, sizeof(pm_op) / sizeof(uint64_t), j - i,
                                   &out[i], &bad, !(o->aux & 2));
                if (err) {
                    m->err = err;
                    return (int64_t)(i + bad);
                }
                i = j - 1;
                continue;
            }
            err = do_load(m, tid, o->addr, &v);
            break;
        case OP_STORE:
            err = do_store(m, tid, o->addr, o->value);
            break;
        case OP_NTSTORE:
            err = do_ntstore(m, tid, o->addr, o->value);
            break;
        case OP_CLFLUSH:
            err = do_flush(m, tid, o->addr, EV_CLFLUSH);
            break;
        case OP_CLFLUSHOPT:
            err = do_flush(m, tid, o->addr, EV_CLFLUSHOPT);
            break;
        case OP_CLWB:
            err = do_flush(m, tid, o->addr, EV_CLWB);
            break;
        case OP_SFENCE:
            err = do_fence(m, tid, EV_SFENCE);
            break;
        case OP_MFENCE:
            err = do_fence(m, tid, EV_MFENCE);
            break;
        case OP_PCOMMIT:
            err = do_pcommit(m, tid);
            break;
        case OP_CAS:
            err = do_rmw(m, tid, o->addr, 1, o->value, o->arg, &v);
            break;
        case OP_XCHG:
            err = do_rmw(m, tid, o->addr, 0, 0, o->value, &v);
            break;
        case OP_WORK: {
            double ns;
            memcpy(&ns, &o->arg, sizeof ns);
            err = do_work(m, tid, ns);
            break;
        }
        case OP_MARK:
            err = do_mark(m, tid, o->aux, o->value);
            break;
        case OP_PB:
            err = do_persist_barrier(m, tid);
            break;
        case OP_XBEGIN:
            err = do_xbegin(m, tid);
            break;
        case OP_XEND:
            err = do_xend(m, tid, &v);
            break;
        case OP_XABORT:
            err = do_xabort(m, tid, o->aux);
            break;
        case OP_XSTATUS:
            err = bad_tid(m, tid) ? PM_ERR_TID : 0;
            if (!err)
                v = htm_status(m, tid);
            break;
        case OP_RDTSC:
            err = do_rdtsc(m, tid, &v);
            break;
        default:
            err = PM_ERR_OP;
        }
        if (err) {
            m->err = err;
            return (int64_t)i;
        }
        out[i] = v;
    }
    m->err = 0;
    return -1;
}

void pm_get_stats(const pm_machine *m, pm_stats *out)
{
    memcpy(out, m->st, (size_t)m->cfg.cores * sizeof(pm_stats));
}

uint64_t pm_stat_sum(const pm_machine *m, size_t offset)
{
    if (offset % sizeof(uint64_t) || offset >= offsetof(pm_stats, wpq_stall_ns))
        return 0;
    uint64_t total = 0;
    for (int i = 0; i < m->cfg.cores; i++) {
        uint64_t v;
        memcpy(&v, (const char *)&m->st[i] + offset, sizeof v);
        total += v;
    }
    return total;
}

size_t pm_trace_len(const pm_machine *m)
{
    return m->tlen;
}

void pm_trace_copy(const pm_machine *m, pm_event *out, size_t n)
{
    if (n > m->tlen)
        n = m->tlen;
    if (n)
        memcpy(out, m->tr, n * sizeof(pm_event));
}
