/* Crash-state hot paths; see crash.h. References: crashfuzz/model.py (sweep, hashing) and
 * crashfuzz/states.py (PyKernel: odometer, walk). */
#include <stdlib.h>
#include "crash.h"

enum { EV_STORE = 1, EV_NTSTORE = 2, EV_RMW = 3, EV_CLFLUSH = 4, EV_CLFLUSHOPT = 5,
       EV_CLWB = 6, EV_SFENCE = 7, EV_MFENCE = 8, EV_PCOMMIT = 9 };
#define LINE_SLOTS 8

int crash_tables_check(const crash_tables *t)
{
    if (!t || t->nchains < 0 || t->nstores < 0 || t->nwords < 0 || !t->off)
        return -1;
    if (t->off[0] != 0 || t->off[t->nchains] != t->nstores)
        return -1;
    for (int64_t c = 0; c < t->nchains; c++)
        if (t->off[c + 1] < t->off[c])
            return -1;
    if (t->nstores && (!t->word || !t->val || !t->old || !t->d1 || !t->d2))
        return -1;
    for (int64_t s = 0; s < t->nstores; s++)
        if (t->word[s] < 0 || t->word[s] >= t->nwords)
            return -1;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
typedef struct {
    int64_t *chain, *val, *next;
    int64_t used, cap;
} pool_t;

static int pool_push(pool_t *p, int64_t *head, int64_t *tail, int64_t c, int64_t v)
{
    if (p->used >= p->cap)
        return -1;
    int64_t e = p->used++;
    p->chain[e] = c;
    p->val[e] = v;
    p->next[e] = -1;
    if (*tail >= 0)
        p->next[*tail] = e;
    else
        *head = e;
    *tail = e;
    return 0;
}

typedef struct {
    int64_t *lo, *accepted, *acc_c, *acc_v, *out_k, *out_chain, *out_lo;
    int64_t nout, nacc, cap;
    int pdom0;
} sweep_t;

/* lo[c] >= v from point at on; logged when it rises. 0, or -2 when the log is full. */
static int raise_lo(sweep_t *w, int64_t at, int64_t c, int64_t v)
{
    if (v <= w->lo[c])
        return 0;
    if (w->nout >= w->cap)
        return -2;
    w->lo[c] = v;
    w->out_k[w->nout] = at;
    w->out_chain[w->nout] = c;
    w->out_lo[w->nout++] = v;
    return 0;
}

/* The first v stores of chain c are covered at point at: persistent, or accepted in PDOM-0. */
static int cover(sweep_t *w, int64_t at, int64_t c, int64_t v)
{
    if (!w->pdom0)
        return raise_lo(w, at, c, v);
    if (v <= w->accepted[c])
        return 0;
    if (w->nacc >= w->cap)
        return -2;
    w->accepted[c] = v;
    w->acc_c[w->nacc] = c;
    w->acc_v[w->nacc++] = v;
    return 0;
}

int64_t crash_sweep(const uint8_t *kind, const uint16_t *tid, const uint8_t *drained,
                    const int64_t *chain, const int64_t *frow, const int64_t *line_table,
                    int64_t nrows, int64_t n, int64_t nchains, int64_t nthreads, int domain,
                    int64_t *out_k, int64_t *out_chain, int64_t *out_lo, int64_t cap)
{
    if (n < 0 || nchains < 0 || nthreads <= 0 || nrows < 0 || cap < 0 || domain < 0 || domain > 2)
        return -1;
    if (n > 0 && (!kind || !tid || !drained || !chain || !frow))
        return -1;
    int64_t res = -3, applied = 0;
    int64_t *count = calloc((size_t)nchains + 1, sizeof *count);
    int64_t *head = malloc((size_t)nthreads * sizeof *head);
    int64_t *tail = malloc((size_t)nthreads * sizeof *tail);
    int64_t *upto = malloc((size_t)nthreads * sizeof *upto);
    sweep_t w = { calloc((size_t)nchains + 1, sizeof(int64_t)), calloc((size_t)nchains + 1, sizeof(int64_t)),
                  calloc((size_t)cap + 1, sizeof(int64_t)), calloc((size_t)cap + 1, sizeof(int64_t)),
                  out_k, out_chain, out_lo, 0, 0, cap, domain == 0 };
    pool_t pool = { calloc((size_t)cap + 1, sizeof(int64_t)), calloc((size_t)cap + 1, sizeof(int64_t)),
                    calloc((size_t)cap + 1, sizeof(int64_t)), 0, cap };
    if (!count || !head || !tail || !upto || !w.lo || !w.accepted || !w.acc_c || !w.acc_v
        || !pool.chain || !pool.val || !pool.next)
        goto done;
    for (int64_t t = 0; t < nthreads; t++)
        head[t] = tail[t] = upto[t] = -1;
    res = -1;
    for (int64_t i = 0; i < n; i++) {
        int k = kind[i], rc = 0;
        int64_t t = tid[i], c = chain[i];
        if (t >= nthreads || c >= nchains || c < -1)
            goto done;
        if (c >= 0) {
            count[c]++;
            if (k == EV_NTSTORE && !drained[i])
                rc = pool_push(&pool, &head[t], &tail[t], c, count[c]) < 0 ? -2 : 0;
            else if (k == EV_NTSTORE && drained[i] == 2)
                rc = raise_lo(&w, i + 1, c, count[c]);
            else if (domain == 2 || (k == EV_NTSTORE && drained[i]))
                rc = cover(&w, i + 1, c, count[c]);
        }
        if (!rc && (k == EV_CLFLUSH || k == EV_CLFLUSHOPT || k == EV_CLWB) && domain != 2) {
            int64_t r = frow[i];
            if (r >= nrows || r < -1)
                goto done;
            for (int s = 0; r >= 0 && s < LINE_SLOTS && !rc; s++) {
                int64_t c2 = line_table[r * LINE_SLOTS + s];
                if (c2 < 0)
                    break;
                if (c2 >= nchains)
                    goto done;
                if (!count[c2])
                    continue;
                if (k == EV_CLFLUSH)
                    rc = cover(&w, i + 1, c2, count[c2]);
                else
                    rc = pool_push(&pool, &head[t], &tail[t], c2, count[c2]) < 0 ? -2 : 0;
            }
        } else if (k == EV_PCOMMIT && domain == 0) {
            upto[t] = w.nacc;
        }
        if (!rc && (k == EV_SFENCE || k == EV_MFENCE || k == EV_RMW)) {
            if (domain == 0) {
                for (int64_t e = applied; e < upto[t] && !rc; e++)
                    rc = raise_lo(&w, i + 1, w.acc_c[e], w.acc_v[e]);
                if (upto[t] > applied)
                    applied = upto[t];
                upto[t] = -1;
            }
            for (int64_t e = head[t]; e >= 0 && !rc; e = pool.next[e])
                rc = cover(&w, i + 1, pool.chain[e], pool.val[e]);
            head[t] = tail[t] = -1;
        }
        if (rc) {
            res = rc;
            goto done;
        }
    }
    res = w.nout;
done:
    free(count); free(head); free(tail); free(upto);
    free(w.lo); free(w.accepted); free(w.acc_c); free(w.acc_v);
    free(pool.chain); free(pool.val); free(pool.next);
    return res;
}

/* ---------------------------------------------------------------------------------------- */
/* Move chain c from prefix a to prefix b, updating img and h. Bounds are checked by callers. */
static inline void step_chain(const crash_tables *t, int64_t c, int64_t a, int64_t b,
                              uint64_t *img, uint64_t *h)
{
    const int64_t base = t->off[c];
    uint64_t h1 = h[0], h2 = h[1];
    if (b > a) {
        for (int64_t s = base + a; s < base + b; s++) {
            img[t->word[s]] = t->val[s];
            h1 += t->d1[s];
            h2 += t->d2[s];
        }
    } else {
        for (int64_t s = base + a - 1; s >= base + b; s--) {
            img[t->word[s]] = t->old[s];
            h1 -= t->d1[s];
            h2 -= t->d2[s];
        }
    }
    h[0] = h1;
    h[1] = h2;
}

static inline int64_t chain_len(const crash_tables *t, int64_t c)
{
    return t->off[c + 1] - t->off[c];
}

int64_t crash_odometer(const crash_tables *t, int64_t nfree, const int64_t *fchain,
                       const int64_t *rep_off, const int64_t *reps, int64_t *digit,
                       uint64_t *img, uint64_t *hash, int64_t count, uint64_t *out_hash)
{
    if (!t || nfree < 0 || count < 0 || !img || !hash)
        return -1;
    if (nfree > 0 && (!fchain || !rep_off || !reps || !digit || rep_off[0] != 0))
        return -1;
    for (int64_t i = 0; i < nfree; i++) {
        int64_t c = fchain[i];
        if (c < 0 || c >= t->nchains || rep_off[i + 1] <= rep_off[i])
            return -1;
        if (digit[i] < 0 || digit[i] >= rep_off[i + 1] - rep_off[i])
            return -1;
        for (int64_t r = rep_off[i]; r < rep_off[i + 1]; r++)
            if (reps[r] < 0 || reps[r] > chain_len(t, c) || (r > rep_off[i] && reps[r] <= reps[r - 1]))
                return -1;
    }
    for (int64_t s = 0; s < count; s++) {
        for (int64_t i = 0; i < nfree; i++) {
            const int64_t *rp = reps + rep_off[i];
            int64_t nr = rep_off[i + 1] - rep_off[i];
            int64_t d = digit[i];
            if (d + 1 < nr) {
                step_chain(t, fchain[i], rp[d], rp[d + 1], img, hash);
                digit[i] = d + 1;
                break;
            }
            step_chain(t, fchain[i], rp[d], rp[0], img, hash);
            digit[i] = 0;
        }
        if (out_hash) {
            out_hash[2 * s] = hash[0];
            out_hash[2 * s + 1] = hash[1];
        }
    }
    return count;
}

int64_t crash_walk(const crash_tables *t, int64_t nfree, const int64_t *fchain, int64_t *x,
                   const int64_t *targets, int64_t count, uint64_t *img, uint64_t *hash,
                   uint64_t *out_hash)
{
    if (!t || nfree < 0 || count < 0 || !img || !hash)
        return -1;
    if (nfree > 0 && (!fchain || !x || (count > 0 && !targets)))
        return -1;
    for (int64_t i = 0; i < nfree; i++) {
        if (fchain[i] < 0 || fchain[i] >= t->nchains || x[i] < 0 || x[i] > chain_len(t, fchain[i]))
            return -1;
    }
    for (int64_t s = 0; s < count; s++) {
        const int64_t *tg = targets + s * nfree;
        for (int64_t i = 0; i < nfree; i++) {
            int64_t v = tg[i];
            if (v < 0 || v > chain_len(t, fchain[i]))
                return -1;
            if (v != x[i]) {
                step_chain(t, fchain[i], x[i], v, img, hash);
                x[i] = v;
            }
        }
        if (out_hash) {
            out_hash[2 * s] = hash[0];
            out_hash[2 * s + 1] = hash[1];
        }
    }
    return count;
}

void crash_hash_words(const uint64_t *words, int64_t n, uint64_t *out)
{
    uint64_t h1 = 0, h2 = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t w2 = 2 * (uint64_t)i;
        h1 += pm_mix64(words[i] ^ pm_mix64(w2));
        h2 += pm_mix64(words[i] + pm_mix64(w2 + 1));
    }
    out[0] = h1;
    out[1] = h2;
}
