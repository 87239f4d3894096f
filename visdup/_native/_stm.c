/*
 * Simple Tree Matching (Yang 1991) on flat preorder trees, compiled.
 *
 * A tree is three int32 buffers: labels, subtree sizes and optional "details" (0 = any).
 * Two nodes match when their labels are equal and their details are equal or either is 0;
 * details let a template's fixed label text ("ISBN-13") match only the same text.
 * The recursion of the textbook algorithm becomes an explicit stack of frames, one per
 * matched node pair, because page trees can be thousands of levels deep. A pair's score
 * depends on the shapes of its two subtrees alone: each subtree gets a shape id first
 * (shape_ids), equal subtrees are mapped without matrices, and a pair met again with the
 * shapes of one scored before takes its score and record (memo_find). The GIL is released
 * while the matrices are filled so several pages can be compared in threads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <pthread.h>
#endif

typedef struct {
    Py_ssize_t n;
    const int32_t *lab;
    const int32_t *size;
    const int32_t *det; /* may be NULL */
    int32_t *first;     /* index into kids of the first child */
    int32_t *nkids;
    int32_t *kids;
    int32_t *shape; /* each subtree's shape id (shape_ids), or NULL */
} Tree;

typedef struct {
    int32_t i, j, ni, nj, p, q;
    int64_t slot; /* cell of the parent's W this frame fills, -1 for the root */
    size_t off;   /* where its W (then R) starts in the work's arena */
    int32_t *W;   /* ni x nj child pair scores */
    int32_t *R;   /* ni x nj child records (mapping mode) */
} Frame;

typedef struct {
    int32_t ci, cj, rec;
} Pair;

typedef struct {
    int32_t start, count;
} Record;

typedef struct {
    int32_t sa, sb;   /* the shapes of the pair's two subtrees */
    int32_t score;
    int32_t rec;      /* its record (mapping mode) */
    uint32_t gen;     /* the call it belongs to */
} Memo;

typedef struct {
    int32_t tree, node; /* a subtree of that shape (tree 0 or 1) */
    uint32_t gen;       /* the call it belongs to (another: a free slot) */
} ShapeSlot;

static void tree_free(Tree *t) {
    free(t->first);
    free(t->nkids);
    free(t->kids);
    free(t->shape);
    t->first = t->nkids = t->kids = t->shape = NULL;
}

static inline uint64_t stm_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

/* Builds child lists; returns 0, or -1 for an invalid size array, -2 for no memory. */
static int tree_build(Tree *t) {
    Py_ssize_t n = t->n, pos = 0, i;
    t->first = (int32_t *)malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    t->nkids = (int32_t *)malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    t->kids = (int32_t *)malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    if (!t->first || !t->nkids || !t->kids) {
        tree_free(t);
        return -2;
    }
    if (n == 0) return 0;
    if (t->size[0] != n) {
        tree_free(t);
        return -1;
    }
    for (i = 0; i < n; i++) {
        int64_t end = (int64_t)i + t->size[i];
        int64_t j = i + 1;
        if (t->size[i] < 1 || end > n) {
            tree_free(t);
            return -1;
        }
        t->first[i] = (int32_t)pos;
        t->nkids[i] = 0;
        while (j < end) {
            if (t->size[j] < 1 || j + t->size[j] > end || pos >= n) {
                tree_free(t);
                return -1;
            }
            t->kids[pos++] = (int32_t)j;
            t->nkids[i]++;
            j += t->size[j];
        }
    }
    return 0;
}

static inline int node_match(const Tree *a, const Tree *b, int32_t i, int32_t j) {
    if (a->lab[i] != b->lab[j]) return 0;
    if (a->det && b->det && a->det[i] && b->det[j] && a->det[i] != b->det[j]) return 0;
    return 1;
}

typedef struct {
    Frame *frames;
    Py_ssize_t depth, cap;
    Pair *pairs;
    Py_ssize_t npairs, pcap;
    Record *recs;
    Py_ssize_t nrecs, rcap;
    int32_t *row; /* DP scratch */
    size_t rowcap;
    /* The frames' matrices, one after another: frames end in the reverse order they start
     * (depth first), so a frame's matrices are taken from the top and given back by moving
     * the top down, where a malloc and a free each cost more than the smaller matrices'
     * whole programme. */
    int32_t *arena;
    size_t used, acap;
    /* Scored pairs by the shapes of their two subtrees (see memo_find); an entry is live in
     * the call whose generation it carries, so the table is never cleared between calls. */
    Memo *memo;
    size_t mcap, mlive;
    uint32_t gen;
    ShapeSlot *shapes; /* shape_ids's table */
    size_t scap;
    uint8_t *seen; /* per shape id: met in a once (SEEN_A), more (TWICE_A); in b the same */
    size_t seencap;
    int32_t identity; /* the call's record of equal subtrees, -1 before the first */
} Work;

static void work_free(Work *w) {
    free(w->memo);
    free(w->shapes);
    free(w->seen);
    free(w->arena);
    free(w->frames);
    free(w->pairs);
    free(w->recs);
    free(w->row);
}

/* A thread's work buffers are kept for its next call, up to KEEP_BYTES: a build or a snapshot
 * matches one page against dozens in a row, and buffers freed and allocated again each time
 * come back from the system as fresh pages, each a page fault on first touch (the faults cost
 * more than the matching on a template's pages). Freed when the thread ends. */
#define KEEP_BYTES ((size_t)16 << 20)
#ifndef _WIN32
static pthread_key_t kept_key;
static int kept_ready;

static void kept_free(void *kept) {
    work_free((Work *)kept);
    free(kept);
}
#endif

/* The thread's kept buffers, emptied (or a zeroed work where none are kept). */
static void work_take(Work *w) {
    memset(w, 0, sizeof *w);
#ifndef _WIN32
    if (kept_ready) {
        Work *kept = (Work *)pthread_getspecific(kept_key);
        if (kept) {
            *w = *kept;
            memset(kept, 0, sizeof *kept);
            w->depth = 0;
            w->npairs = 0;
            w->nrecs = 0;
            w->used = 0;
        }
    }
#endif
    w->mlive = 0;
    w->identity = -1;
    if (++w->gen == 0) { /* past 2^32 calls: every entry's stamp could read as live again */
        if (w->memo) memset(w->memo, 0, sizeof(Memo) * w->mcap);
        if (w->shapes) memset(w->shapes, 0, sizeof(ShapeSlot) * w->scap);
        w->gen = 1;
    }
}

/* The buffers kept for the thread's next call when small enough, else freed. */
static void work_keep(Work *w) {
#ifndef _WIN32
    size_t bytes = (size_t)w->cap * sizeof(Frame) + (size_t)w->pcap * sizeof(Pair) +
                   (size_t)w->rcap * sizeof(Record) + (w->rowcap + w->acap) * sizeof(int32_t) +
                   w->mcap * sizeof(Memo) + w->scap * sizeof(ShapeSlot) + w->seencap;
    if (kept_ready && bytes <= KEEP_BYTES) {
        Work *kept = (Work *)pthread_getspecific(kept_key);
        if (!kept) {
            kept = (Work *)calloc(1, sizeof *kept);
            if (kept && pthread_setspecific(kept_key, kept) != 0) {
                free(kept);
                kept = NULL;
            }
        }
        if (kept) {
            work_free(kept); /* empty: taken by this call */
            *kept = *w;
            return;
        }
    }
#endif
    work_free(w);
}

/* Shape ids, one numbering for both trees: two subtrees get one id exactly when they have the
 * same labels, sizes and (with_det) details in preorder, i.e. the same label and detail at
 * the top and children of the same shapes in order. Children follow their parent in preorder,
 * so each tree is read backwards, and a node's children have their ids when it gets its own.
 * A digest of the node's top and its children's shapes only says where to look: a node takes
 * the shape of a subtree its probe meets once they are compared field by field. Returns 0,
 * or -2 for no memory (then there are no shapes: every pair goes through its matrices, only
 * slower). */
/* The bits of a shape's digest that choose its slot (all but in tests: with few, every shape
 * meets many others in the table, and only their field-by-field comparison keeps them apart). */
static uint64_t digest_mask = ~(uint64_t)0;

#define SEEN_A 1
#define TWICE_A 2
#define SEEN_B 4
#define TWICE_B 8

static int shape_ids(Work *w, Tree *a, Tree *b, int with_det) {
    Tree *trees[2];
    size_t cap = 64, mask, total = (size_t)a->n + (size_t)b->n;
    int32_t next = 0;
    int t;
    trees[0] = a;
    trees[1] = b;
    while (cap < 2 * total) cap <<= 1;
    if (cap > w->scap) {
        ShapeSlot *grown = (ShapeSlot *)calloc(cap, sizeof(ShapeSlot)); /* generation 0: free */
        if (!grown) return -2;
        free(w->shapes);
        w->shapes = grown;
        w->scap = cap;
    }
    if (total > w->seencap) {
        uint8_t *grown = (uint8_t *)malloc(total ? total : 1);
        if (!grown) return -2;
        free(w->seen);
        w->seen = grown;
        w->seencap = total;
    }
    mask = cap - 1;
    for (t = 0; t < 2; t++) {
        Tree *me = trees[t];
        Py_ssize_t x;
        me->shape = (int32_t *)malloc(sizeof(int32_t) * (size_t)(me->n > 0 ? me->n : 1));
        if (!me->shape) return -2;
        for (x = me->n - 1; x >= 0; x--) {
            int32_t nk = me->nkids[x], c;
            const int32_t *kx = me->kids + me->first[x];
            uint64_t h = (uint64_t)(uint32_t)me->lab[x] * 0x9e3779b97f4a7c15ULL + (uint64_t)nk;
            size_t k;
            if (with_det) h = h * 0x9e3779b97f4a7c15ULL + (uint64_t)(uint32_t)me->det[x];
            for (c = 0; c < nk; c++)
                h = h * 0x9e3779b97f4a7c15ULL + (uint64_t)(uint32_t)me->shape[kx[c]];
            h = stm_mix(h, 0);
            for (k = (size_t)(h & digest_mask) & mask;; k = (k + 1) & mask) {
                ShapeSlot *sl = &w->shapes[k];
                const Tree *other;
                const int32_t *ky;
                int32_t y;
                if (sl->gen != w->gen) { /* a new shape */
                    sl->gen = w->gen;
                    sl->tree = t;
                    sl->node = (int32_t)x;
                    w->seen[next] = t ? SEEN_B : SEEN_A;
                    me->shape[x] = next++;
                    break;
                }
                other = trees[sl->tree];
                y = sl->node;
                if (other->lab[y] != me->lab[x] || other->nkids[y] != nk ||
                    (with_det && other->det[y] != me->det[x]))
                    continue;
                ky = other->kids + other->first[y];
                for (c = 0; c < nk && other->shape[ky[c]] == me->shape[kx[c]]; c++) {
                }
                if (c == nk) { /* the shape of that subtree */
                    uint8_t *seen = &w->seen[other->shape[y]];
                    me->shape[x] = other->shape[y];
                    if (t)
                        *seen |= (*seen & SEEN_B) ? TWICE_B : SEEN_B;
                    else
                        *seen |= (*seen & SEEN_A) ? TWICE_A : SEEN_A;
                    break;
                }
            }
        }
    }
    return 0;
}

/* A pair's score (and record) is a function of the shapes of its two subtrees alone, as
 * node_match and the shortcuts read them; a record names children by their places under the
 * pair. A page's lists repeat a few item shapes, and the items of one page against those of
 * another open the same few frames again and again (a manual's index pages: hundreds of
 * thousands of frames, a thousand or so distinct pairs of shapes). So each scored pair is
 * kept by its two shapes, and a pair met later with the same two takes its score and record.
 * Only pairs that can come again are kept and looked for: a shape met twice in its tree (a
 * page's text details make most shapes unique, and then the table would only cost). */
#define MEMO_MIN ((size_t)1024)
#define MEMO_MAX ((size_t)1 << 18)

/* Whether another pair of nodes may have the shapes sa (in a) and sb (in b). */
static inline int may_recur(const Work *w, int32_t sa, int32_t sb) {
    return (w->seen[sa] & TWICE_A) || (w->seen[sb] & TWICE_B);
}

static inline size_t memo_slot(int32_t sa, int32_t sb, size_t cap) {
    return (size_t)stm_mix((uint64_t)(uint32_t)sa, (uint64_t)(uint32_t)sb) & (cap - 1);
}

/* The pair scored before with the shapes sa and sb, or NULL. */
static inline const Memo *memo_find(const Work *w, int32_t sa, int32_t sb) {
    size_t k, mask;
    if (!w->mlive) return NULL;
    mask = w->mcap - 1;
    for (k = memo_slot(sa, sb, w->mcap);; k = (k + 1) & mask) {
        const Memo *e = &w->memo[k];
        if (e->gen != w->gen) return NULL; /* a free slot (the table is at most half full) */
        if (e->sa == sa && e->sb == sb) return e;
    }
}

/* Keeps a scored pair. Past MEMO_MAX entries, or without memory for a larger table, nothing
 * more is kept: only speed depends on it. */
static void memo_put(Work *w, int32_t sa, int32_t sb, int32_t score, int32_t rec) {
    size_t k, mask;
    Memo *e;
    if (2 * (w->mlive + 1) > w->mcap) {
        size_t cap = w->mcap ? 2 * w->mcap : MEMO_MIN, n;
        Memo *grown;
        if (cap > MEMO_MAX) return;
        grown = (Memo *)calloc(cap, sizeof(Memo)); /* generation 0: no call's */
        if (!grown) return;
        for (n = 0; n < w->mcap; n++) { /* this call's entries move; earlier calls' are left */
            const Memo *old = &w->memo[n];
            if (old->gen != w->gen) continue;
            for (k = memo_slot(old->sa, old->sb, cap); grown[k].gen == w->gen;
                 k = (k + 1) & (cap - 1)) {
            }
            grown[k] = *old;
        }
        free(w->memo);
        w->memo = grown;
        w->mcap = cap;
    }
    mask = w->mcap - 1;
    for (k = memo_slot(sa, sb, w->mcap); w->memo[k].gen == w->gen; k = (k + 1) & mask) {
    }
    e = &w->memo[k];
    e->sa = sa;
    e->sb = sb;
    e->score = score;
    e->rec = rec;
    e->gen = w->gen;
    w->mlive++;
}

static int push_frame(Work *w, const Tree *a, const Tree *b, int32_t i, int32_t j, int64_t slot,
                      int mapping) {
    Frame *f;
    size_t cells;
    if (w->depth == w->cap) {
        Py_ssize_t nc = w->cap ? w->cap * 2 : 64;
        Frame *nf = (Frame *)realloc(w->frames, sizeof(Frame) * (size_t)nc);
        if (!nf) return -1;
        w->frames = nf;
        w->cap = nc;
    }
    f = &w->frames[w->depth];
    f->i = i;
    f->j = j;
    f->ni = a->nkids[i];
    f->nj = b->nkids[j];
    f->p = f->q = 0;
    f->slot = slot;
    cells = (size_t)f->ni * (size_t)f->nj;
    if (cells == 0) cells = 1;
    {
        size_t need = mapping ? 2 * cells : cells;
        if (w->used + need > w->acap) {
            size_t nc = w->acap ? w->acap : 4096;
            int32_t *na;
            Py_ssize_t k;
            while (nc < w->used + need) nc *= 2;
            na = (int32_t *)realloc(w->arena, sizeof(int32_t) * nc);
            if (!na) return -1;
            w->arena = na;
            w->acap = nc;
            for (k = 0; k < w->depth; k++) { /* the open frames' matrices, where they now are */
                Frame *g = &w->frames[k];
                size_t gc = (size_t)g->ni * (size_t)g->nj;
                g->W = na + g->off;
                g->R = mapping ? g->W + (gc ? gc : 1) : NULL;
            }
        }
        f->off = w->used;
        f->W = w->arena + w->used;
        f->R = mapping ? f->W + cells : NULL;
        w->used += need;
    }
    w->depth++;
    return 0;
}

/* Room for one more record; 0, or -1 for no memory. */
static int room_for_record(Work *w) {
    if (w->nrecs == w->rcap) {
        Py_ssize_t nc = w->rcap ? w->rcap * 2 : 256;
        Record *nr = (Record *)realloc(w->recs, sizeof(Record) * (size_t)nc);
        if (!nr) return -1;
        w->recs = nr;
        w->rcap = nc;
    }
    return 0;
}

/* The record of a pair of equal subtrees: every node maps onto the same node of the other
 * (count IDENTITY: the reader emits the pairs, start is unused). One serves every such pair
 * of a call: it names no node. Returns its index, -1 for no memory. */
#define IDENTITY (-1)
static int32_t identity_record(Work *w) {
    if (w->identity >= 0) return w->identity;
    if (room_for_record(w) < 0) return -1;
    w->recs[w->nrecs].start = 0;
    w->recs[w->nrecs].count = IDENTITY;
    w->identity = (int32_t)w->nrecs;
    return (int32_t)w->nrecs++;
}

/* Appends the pair (ci, cj) with its record to the mapping's pairs; -1 for no memory. */
static int push_pair(Work *w, int32_t ci, int32_t cj, int32_t rec) {
    if (w->npairs == w->pcap) {
        Py_ssize_t nc = w->pcap ? w->pcap * 2 : 1024;
        Pair *np = (Pair *)realloc(w->pairs, sizeof(Pair) * (size_t)nc);
        if (!np) return -1;
        w->pairs = np;
        w->pcap = nc;
    }
    w->pairs[w->npairs].ci = ci;
    w->pairs[w->npairs].cj = cj;
    w->pairs[w->npairs].rec = rec;
    w->npairs++;
    return 0;
}

/* The record of a pair of nodes with one leaf child each: the leaves' pair when they match
 * (what frame_score's back-trace gives for a 1 x 1 frame). Returns its index, -1 for no
 * memory. */
static int32_t leaf_record(Work *w, int matched) {
    if (room_for_record(w) < 0) return -1;
    w->recs[w->nrecs].start = (int32_t)w->npairs;
    w->recs[w->nrecs].count = matched;
    if (matched && push_pair(w, 0, 0, -1) < 0) return -1;
    return (int32_t)w->nrecs++;
}

/* Fills the DP over one frame's child pairs; returns the frame's score, record via *rec. */
static int64_t frame_score(Work *w, Frame *f, int mapping, int32_t *rec) {
    int32_t ni = f->ni, nj = f->nj, x, y;
    *rec = -1;
    if (ni == 0 || nj == 0) {
        if (mapping) {
            if (room_for_record(w) < 0) return -1;
            w->recs[w->nrecs].start = (int32_t)w->npairs;
            w->recs[w->nrecs].count = 0;
            *rec = (int32_t)w->nrecs++;
        }
        return 1;
    }
    if (!mapping) {
        size_t need = 2 * ((size_t)nj + 1);
        int32_t *prev, *cur, *tmp;
        if (need > w->rowcap) {
            int32_t *nr = (int32_t *)realloc(w->row, sizeof(int32_t) * need);
            if (!nr) return -1;
            w->row = nr;
            w->rowcap = need;
        }
        prev = w->row;
        cur = w->row + nj + 1;
        memset(prev, 0, sizeof(int32_t) * ((size_t)nj + 1));
        for (x = 1; x <= ni; x++) {
            const int32_t *wr = f->W + (size_t)(x - 1) * nj;
            cur[0] = 0;
            for (y = 1; y <= nj; y++) {
                int32_t best = cur[y - 1] > prev[y] ? cur[y - 1] : prev[y];
                int32_t diag = prev[y - 1] + wr[y - 1];
                cur[y] = diag > best ? diag : best;
            }
            tmp = prev;
            prev = cur;
            cur = tmp;
        }
        return (int64_t)prev[nj] + 1;
    } else {
        size_t cols = (size_t)nj + 1;
        size_t need = ((size_t)ni + 1) * cols;
        int32_t *M;
        int32_t count = 0;
        if (need > w->rowcap) {
            int32_t *nr = (int32_t *)realloc(w->row, sizeof(int32_t) * need);
            if (!nr) return -1;
            w->row = nr;
            w->rowcap = need;
        }
        M = w->row;
        memset(M, 0, sizeof(int32_t) * cols);
        for (x = 1; x <= ni; x++) {
            const int32_t *wr = f->W + (size_t)(x - 1) * nj;
            int32_t *cur = M + (size_t)x * cols, *prev = M + (size_t)(x - 1) * cols;
            cur[0] = 0;
            for (y = 1; y <= nj; y++) {
                int32_t best = cur[y - 1] > prev[y] ? cur[y - 1] : prev[y];
                int32_t diag = prev[y - 1] + wr[y - 1];
                cur[y] = diag > best ? diag : best;
            }
        }
        if (room_for_record(w) < 0) return -1;
        w->recs[w->nrecs].start = (int32_t)w->npairs;
        /* Back-trace from the end; pairs come out last-first and are read that way. */
        x = ni;
        y = nj;
        while (x > 0 && y > 0) {
            int32_t v = M[(size_t)x * cols + y];
            if (v == M[(size_t)x * cols + y - 1]) {
                y--;
            } else if (v == M[(size_t)(x - 1) * cols + y]) {
                x--;
            } else {
                size_t cell = (size_t)(x - 1) * nj + (y - 1);
                if (push_pair(w, x - 1, y - 1, f->R[cell]) < 0) return -1;
                count++;
                x--;
                y--;
            }
        }
        w->recs[w->nrecs].count = count;
        *rec = (int32_t)w->nrecs++;
        return (int64_t)M[(size_t)ni * cols + nj] + 1;
    }
}

/* Runs STM; returns score >= 0, -1 on no memory. In mapping mode *root_rec gets the root record. */
static int64_t run_stm(const Tree *a, const Tree *b, int mapping, Work *w, int32_t *root_rec) {
    int64_t result = 0;
    int shapes = a->shape && b->shape; /* equal subtrees, and pairs scored by their shapes */
    *root_rec = -1;
    if (a->n == 0 || b->n == 0 || !node_match(a, b, 0, 0)) return 0;
    if (push_frame(w, a, b, 0, 0, -1, mapping) < 0) return -1;
    while (w->depth > 0) {
        Frame *f = &w->frames[w->depth - 1];
        int descended = 0;
        while (f->nj > 0 && f->p < f->ni) {
            int32_t ci = a->kids[a->first[f->i] + f->p];
            int32_t cj = b->kids[b->first[f->j] + f->q];
            size_t cell = (size_t)f->p * f->nj + f->q;
            if (++f->q == f->nj) {
                f->q = 0;
                f->p++;
            }
            if (!node_match(a, b, ci, cj)) {
                f->W[cell] = 0;
                if (mapping) f->R[cell] = -1;
            } else if (a->nkids[ci] == 0 || b->nkids[cj] == 0) {
                f->W[cell] = 1;
                if (mapping) f->R[cell] = -1;
            } else if (shapes && a->shape[ci] == b->shape[cj]) { /* equal subtrees */
                f->W[cell] = a->size[ci];
                if (mapping) {
                    int32_t rec = identity_record(w);
                    if (rec < 0) return -1;
                    f->R[cell] = rec;
                }
            } else if (a->nkids[ci] == 1 && b->nkids[cj] == 1 &&
                       a->nkids[a->kids[a->first[ci]]] == 0 &&
                       b->nkids[b->kids[b->first[cj]]] == 0) {
                /* a leaf under each (a link's text, a heading's): the frame it would open
                 * scores 1, and 1 more when the two leaves match */
                int matched = node_match(a, b, a->kids[a->first[ci]], b->kids[b->first[cj]]);
                f->W[cell] = 1 + matched;
                if (mapping) {
                    int32_t rec = leaf_record(w, matched);
                    if (rec < 0) return -1;
                    f->R[cell] = rec;
                }
            } else {
                const Memo *known = NULL;
                if (shapes && may_recur(w, a->shape[ci], b->shape[cj]))
                    known = memo_find(w, a->shape[ci], b->shape[cj]);
                if (known) {
                    f->W[cell] = known->score;
                    if (mapping) f->R[cell] = known->rec;
                    continue;
                }
                if (push_frame(w, a, b, ci, cj, (int64_t)cell, mapping) < 0) return -1;
                descended = 1;
                break;
            }
        }
        if (descended) continue;
        {
            int32_t rec;
            int64_t score = frame_score(w, f, mapping, &rec);
            int64_t slot = f->slot;
            int32_t fi = f->i, fj = f->j;
            if (score < 0) return -1;
            w->used = f->off; /* its matrices back to the arena */
            w->depth--;
            if (w->depth == 0) {
                result = score;
                *root_rec = rec;
            } else {
                Frame *parent = &w->frames[w->depth - 1];
                parent->W[slot] = (int32_t)score;
                if (mapping) parent->R[slot] = rec;
                if (shapes && may_recur(w, a->shape[fi], b->shape[fj]))
                    memo_put(w, a->shape[fi], b->shape[fj], (int32_t)score, rec);
            }
        }
    }
    return result;
}

static int get_buffer(PyObject *obj, Py_buffer *view, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->itemsize != 4 || (view->format && strcmp(view->format, "i") != 0 &&
                                strcmp(view->format, "l") != 0 && strcmp(view->format, "=i") != 0)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int32 buffer (array('i'))", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Appends the node pair (i, j) to the list; -1 with an exception. */
static int append_pair(PyObject *pairs, int32_t i, int32_t j) {
    PyObject *t = Py_BuildValue("(ii)", i, j);
    int rc = t ? PyList_Append(pairs, t) : -1;
    Py_XDECREF(t);
    return rc;
}

static PyObject *stm_match(PyObject *self, PyObject *args) {
    PyObject *al, *as, *ad, *bl, *bs, *bd;
    int mapping = 0;
    Py_buffer v[6];
    int have[6] = {0, 0, 0, 0, 0, 0};
    Tree a, b;
    Work w;
    int64_t score = 0;
    int32_t root_rec = -1;
    int err = 0, k;
    PyObject *result = NULL;
    (void)self;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    work_take(&w);
    if (!PyArg_ParseTuple(args, "OOOOOO|p", &al, &as, &ad, &bl, &bs, &bd, &mapping)) return NULL;
    {
        PyObject *objs[6] = {al, as, ad, bl, bs, bd};
        const char *names[6] = {"a labels", "a sizes", "a details",
                                "b labels", "b sizes", "b details"};
        for (k = 0; k < 6; k++) {
            if (objs[k] == Py_None && (k == 2 || k == 5)) continue;
            if (get_buffer(objs[k], &v[k], names[k]) < 0) goto done;
            have[k] = 1;
        }
    }
    a.n = v[0].len / 4;
    b.n = v[3].len / 4;
    if (v[1].len / 4 != a.n || v[4].len / 4 != b.n || (have[2] && v[2].len / 4 != a.n) ||
        (have[5] && v[5].len / 4 != b.n)) {
        PyErr_SetString(PyExc_ValueError, "labels, sizes and details must have one entry per node");
        goto done;
    }
    a.lab = (const int32_t *)v[0].buf;
    a.size = (const int32_t *)v[1].buf;
    a.det = have[2] ? (const int32_t *)v[2].buf : NULL;
    b.lab = (const int32_t *)v[3].buf;
    b.size = (const int32_t *)v[4].buf;
    b.det = have[5] ? (const int32_t *)v[5].buf : NULL;

    Py_BEGIN_ALLOW_THREADS
    err = tree_build(&a);
    if (!err) {
        err = tree_build(&b);
        if (!err) {
            /* without shapes (no memory for them) every pair goes through its matrices; two
             * roots that do not match need none */
            if (a.n && b.n && node_match(&a, &b, 0, 0) &&
                shape_ids(&w, &a, &b, a.det && b.det) < 0) {
                free(a.shape);
                free(b.shape);
                a.shape = b.shape = NULL;
            }
            score = run_stm(&a, &b, mapping, &w, &root_rec);
            if (score < 0) err = -2;
        }
    }
    Py_END_ALLOW_THREADS

    if (err == -1) {
        PyErr_SetString(PyExc_ValueError, "sizes do not describe a preorder tree");
        goto done;
    }
    if (err == -2) {
        PyErr_NoMemory();
        goto done;
    }
    if (!mapping) {
        result = PyLong_FromLongLong(score);
        goto done;
    }
    {
        /* Walk the records from the root pair, emitting (i, j) node pairs. */
        PyObject *pairs = PyList_New(0);
        int32_t *stack_rec = NULL, *stack_i = NULL, *stack_j = NULL;
        Py_ssize_t sp = 0, scap = 0;
        if (!pairs) goto done;
        if (score > 0) {
            if (append_pair(pairs, 0, 0) < 0) {
                Py_DECREF(pairs);
                goto done;
            }
            scap = 64;
            stack_rec = (int32_t *)malloc(sizeof(int32_t) * scap);
            stack_i = (int32_t *)malloc(sizeof(int32_t) * scap);
            stack_j = (int32_t *)malloc(sizeof(int32_t) * scap);
            if (!stack_rec || !stack_i || !stack_j) {
                free(stack_rec);
                free(stack_i);
                free(stack_j);
                Py_DECREF(pairs);
                PyErr_NoMemory();
                goto done;
            }
            stack_rec[0] = root_rec;
            stack_i[0] = 0;
            stack_j[0] = 0;
            sp = 1;
            while (sp > 0) {
                int32_t r, pi, pj, c;
                sp--;
                r = stack_rec[sp];
                pi = stack_i[sp];
                pj = stack_j[sp];
                if (r < 0) continue;
                if (w.recs[r].count == IDENTITY) { /* equal subtrees: node k onto node k */
                    int32_t k, n = a.size[pi];
                    for (k = 1; k < n; k++) {
                        if (append_pair(pairs, pi + k, pj + k) < 0) {
                            Py_DECREF(pairs);
                            free(stack_rec);
                            free(stack_i);
                            free(stack_j);
                            goto done;
                        }
                    }
                    continue;
                }
                for (c = 0; c < w.recs[r].count; c++) {
                    Pair *pr = &w.pairs[w.recs[r].start + c];
                    int32_t ni = a.kids[a.first[pi] + pr->ci];
                    int32_t nj = b.kids[b.first[pj] + pr->cj];
                    if (append_pair(pairs, ni, nj) < 0) {
                        Py_DECREF(pairs);
                        free(stack_rec);
                        free(stack_i);
                        free(stack_j);
                        goto done;
                    }
                    if (pr->rec >= 0) {
                        if (sp == scap) {
                            scap *= 2;
                            stack_rec = (int32_t *)realloc(stack_rec, sizeof(int32_t) * scap);
                            stack_i = (int32_t *)realloc(stack_i, sizeof(int32_t) * scap);
                            stack_j = (int32_t *)realloc(stack_j, sizeof(int32_t) * scap);
                            if (!stack_rec || !stack_i || !stack_j) {
                                free(stack_rec);
                                free(stack_i);
                                free(stack_j);
                                Py_DECREF(pairs);
                                PyErr_NoMemory();
                                goto done;
                            }
                        }
                        stack_rec[sp] = pr->rec;
                        stack_i[sp] = ni;
                        stack_j[sp] = nj;
                        sp++;
                    }
                }
            }
            free(stack_rec);
            free(stack_i);
            free(stack_j);
        }
        result = Py_BuildValue("(LN)", (long long)score, pairs);
    }
done:
    work_keep(&w);
    tree_free(&a);
    tree_free(&b);
    for (k = 0; k < 6; k++)
        if (have[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* ------------------------------------------------------------------ label-path bounds */

/* The label-path bound of visdup.templates.stm.stm_upper_bound for two histograms: the
   smaller count of every key they share, summed. 0 with *out set; 1 when Python must answer
   (a value that is not an int, or a sum past 2^62); -1 with an exception. */
static int pair_path_bound(PyObject *a, PyObject *b, long long *out) {
    PyObject *small = a, *large = b, *key, *value;
    Py_ssize_t pos = 0;
    long long total = 0;
    if (PyDict_GET_SIZE(b) < PyDict_GET_SIZE(a)) {
        small = b;
        large = a;
    }
    while (PyDict_Next(small, &pos, &key, &value)) {
        PyObject *other = PyDict_GetItemWithError(large, key); /* borrowed */
        long long x, y;
        if (other == NULL) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        if (!PyLong_CheckExact(value) || !PyLong_CheckExact(other)) return 1;
        x = PyLong_AsLongLong(value);
        y = PyLong_AsLongLong(other);
        if ((x == -1 || y == -1) && PyErr_Occurred()) {
            PyErr_Clear();
            return 1;
        }
        total += x < y ? x : y;
        if (total > ((long long)1 << 62) || total < -((long long)1 << 62)) return 1;
    }
    *out = total;
    return 0;
}

static PyObject *path_bounds(PyObject *self, PyObject *args) {
    PyObject *a, *others, *seq, *out;
    Py_ssize_t n, i;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O", &PyDict_Type, &a, &others)) return NULL;
    seq = PySequence_Fast(others, "path_bounds: the other histograms must be a sequence");
    if (seq == NULL) return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    out = PyList_New(n);
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        PyObject *b = PySequence_Fast_GET_ITEM(seq, i), *v;
        long long total = 0;
        int got;
        if (!PyDict_Check(b)) {
            got = 1;
        } else {
            got = pair_path_bound(a, b, &total);
        }
        if (got != 0) {
            Py_DECREF(out);
            Py_DECREF(seq);
            if (got < 0) return NULL;
            Py_RETURN_NONE; /* Python answers the whole batch */
        }
        v = PyLong_FromLongLong(total);
        if (v == NULL) {
            Py_DECREF(out);
            Py_DECREF(seq);
            return NULL;
        }
        PyList_SET_ITEM(out, i, v);
    }
    Py_DECREF(seq);
    return out;
}

/* ------------------------------------------------------------------ label paths
 *
 * path_counts(labels, sizes, n) is visdup.templates.stm.label_paths's loop: each node's
 * path hash is hash((its parent's path hash or 0, its label)), the very value Python's
 * tuple hash gives (CPython's xxHash-style combination of the items' hashes; an int's hash
 * is its value modulo 2**61 - 1), so both make the same histogram in one process.
 */
#if SIZEOF_PY_UHASH_T > 4
#define PATH_PRIME_1 ((Py_uhash_t)11400714785074694791ULL)
#define PATH_PRIME_2 ((Py_uhash_t)14029467366897019727ULL)
#define PATH_PRIME_5 ((Py_uhash_t)2870177450012600261ULL)
#define PATH_ROTATE(x) ((x << 31) | (x >> 33))
#else
#define PATH_PRIME_1 ((Py_uhash_t)2654435761UL)
#define PATH_PRIME_2 ((Py_uhash_t)2246822519UL)
#define PATH_PRIME_5 ((Py_uhash_t)374761393UL)
#define PATH_ROTATE(x) ((x << 13) | (x >> 19))
#endif

/* hash(v) of a Python int holding the hash value v */
static Py_uhash_t int_hash(Py_hash_t v) {
    Py_uhash_t magnitude = v < 0 ? (Py_uhash_t)0 - (Py_uhash_t)v : (Py_uhash_t)v;
    Py_hash_t h = (Py_hash_t)(magnitude % (Py_uhash_t)_PyHASH_MODULUS);
    if (v < 0) h = -h;
    return (Py_uhash_t)(h == -1 ? -2 : h);
}

/* hash((parent, label)) as a 2-tuple's, given hash(label) */
static Py_hash_t pair_hash(Py_hash_t parent, Py_hash_t label) {
    Py_uhash_t acc = PATH_PRIME_5;
    acc += int_hash(parent) * PATH_PRIME_2;
    acc = PATH_ROTATE(acc);
    acc *= PATH_PRIME_1;
    acc += (Py_uhash_t)label * PATH_PRIME_2;
    acc = PATH_ROTATE(acc);
    acc *= PATH_PRIME_1;
    acc += (Py_uhash_t)2 ^ (PATH_PRIME_5 ^ 3527539UL);
    if (acc == (Py_uhash_t)-1) return 1546275796;
    return (Py_hash_t)acc;
}

static PyObject *path_counts(PyObject *self, PyObject *args) {
    PyObject *labels, *sizes, *out = NULL;
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOn", &labels, &sizes, &n)) return NULL;
    PyObject *ls = PySequence_Fast(labels, "path_counts: labels must be a sequence");
    if (ls == NULL) return NULL;
    PyObject *ss = PySequence_Fast(sizes, "path_counts: sizes must be a sequence");
    if (ss == NULL) {
        Py_DECREF(ls);
        return NULL;
    }
    if (n > PySequence_Fast_GET_SIZE(ls)) n = PySequence_Fast_GET_SIZE(ls);
    if (n > PySequence_Fast_GET_SIZE(ss)) n = PySequence_Fast_GET_SIZE(ss);
    if (n < 0) n = 0;
    /* the open nodes: where each ends, and its path hash */
    Py_ssize_t *ends = PyMem_Malloc(((size_t)n + 1) * sizeof(Py_ssize_t));
    Py_hash_t *paths = PyMem_Malloc(((size_t)n + 1) * sizeof(Py_hash_t));
    Py_ssize_t top = 0;
    if (ends == NULL || paths == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    out = PyDict_New();
    if (out == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_hash_t label = PyObject_Hash(PySequence_Fast_GET_ITEM(ls, i));
        if (label == -1) goto fail;
        PyObject *size_obj = PySequence_Fast_GET_ITEM(ss, i);
        int overflow = 0;
        long long size = PyLong_Check(size_obj) ? PyLong_AsLongLongAndOverflow(size_obj, &overflow) : 0;
        if (size == -1 && PyErr_Occurred()) goto fail;
        if (!PyLong_Check(size_obj) || overflow || size > PY_SSIZE_T_MAX - i ||
            size < PY_SSIZE_T_MIN) {
            Py_CLEAR(out); /* no int, or past what a tree holds: Python answers */
            Py_INCREF(Py_None);
            out = Py_None;
            goto done;
        }
        while (top && ends[top - 1] <= i) top--;
        Py_hash_t h = pair_hash(top ? paths[top - 1] : 0, label);
        PyObject *key = PyLong_FromSsize_t(h);
        if (key == NULL) goto fail;
        PyObject *was = PyDict_GetItemWithError(out, key);
        long long count = 1;
        if (was != NULL) {
            count = PyLong_AsLongLong(was) + 1;
        } else if (PyErr_Occurred()) {
            Py_DECREF(key);
            goto fail;
        }
        PyObject *value = PyLong_FromLongLong(count);
        if (value == NULL || PyDict_SetItem(out, key, value) < 0) {
            Py_XDECREF(value);
            Py_DECREF(key);
            goto fail;
        }
        Py_DECREF(value);
        Py_DECREF(key);
        ends[top] = i + (Py_ssize_t)size;
        paths[top] = h;
        top++;
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    PyMem_Free(ends);
    PyMem_Free(paths);
    Py_DECREF(ls);
    Py_DECREF(ss);
    return out;
}

/* ------------------------------------------------------------------ a tree's parents and texts */

PyDoc_STRVAR(parents_doc,
"parents(sizes) -> visdup.templates.flat_tree.FlatTree.parents of a tree's sizes: each node's\n"
"parent (-1: none), each node handing its index to its children by jumping over their\n"
"subtrees; sizes no tree has (below 1, past the end) move on by one node or stop at the end.\n"
"None when Python must answer (a size that is no int within 64 bits).");

static PyObject *
stm_parents(PyObject *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "parents: sizes must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    long long *size = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(long long));
    Py_ssize_t *parent = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(Py_ssize_t));
    PyObject *result = NULL;
    if (size == NULL || parent == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        int overflow = 0;
        if (!PyLong_Check(item)) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        size[i] = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (overflow) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (size[i] == -1 && PyErr_Occurred()) goto done;
        parent[i] = -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (size[i] <= 1) continue;
        Py_ssize_t end = size[i] >= (long long)(n - i) ? n : i + (Py_ssize_t)size[i];
        Py_ssize_t j = i + 1;
        while (j < end) {
            parent[j] = i;
            long long step = size[j] > 0 ? size[j] : 1;
            if (step >= (long long)(end - j)) break;
            j += (Py_ssize_t)step;
        }
    }
    result = PyList_New(n);
    if (result == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyLong_FromSsize_t(parent[i]);
        if (v == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, v);
    }
done:
    PyMem_Free(size);
    PyMem_Free(parent);
    Py_DECREF(seq);
    return result;
}

PyDoc_STRVAR(text_codes_doc,
"text_codes(texts) -> bytes of int32: visdup.templates.flat_tree.text_code of each text, 0 for\n"
"None (FlatTree.text_details, read by array('i', ...)).");

/* visdup.templates.flat_tree.text_code: FNV-1a over the text's code points, folded to a
 * nonzero int32; the same in every process (a str's hash is not). */
static int32_t text_code_of(PyObject *text) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i;
    uint64_t h = 14695981039346656037ULL;
    for (i = 0; i < n; i++) {
        h ^= (uint64_t)PyUnicode_READ(kind, data, i);
        h *= 1099511628211ULL;
    }
    h ^= h >> 32;
    {
        int32_t code = (int32_t)(h & 0x7FFFFFFFu);
        return code ? code : 1;
    }
}

static PyObject *
stm_text_codes(PyObject *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "text_codes: texts must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    int32_t *codes = (int32_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *text = PySequence_Fast_GET_ITEM(seq, i);
        if (text == Py_None) {
            codes[i] = 0;
            continue;
        }
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "text_codes: a text must be str or None, not %.100s",
                         Py_TYPE(text)->tp_name);
            Py_DECREF(out);
            Py_DECREF(seq);
            return NULL;
        }
        codes[i] = text_code_of(text);
    }
    Py_DECREF(seq);
    return out;
}

static PyObject *stm_digest_bits(PyObject *self, PyObject *arg) {
    long bits = PyLong_AsLong(arg);
    long before = 0;
    uint64_t m = digest_mask;
    (void)self;
    if (bits == -1 && PyErr_Occurred()) return NULL;
    if (bits < 0 || bits > 64) {
        PyErr_SetString(PyExc_ValueError, "bits must be in 0..64");
        return NULL;
    }
    while (m) {
        before++;
        m >>= 1;
    }
    digest_mask = bits == 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
    return PyLong_FromLong(before);
}

static PyMethodDef methods[] = {
    {"stm", stm_match, METH_VARARGS,
     "stm(a_labels, a_sizes, a_details, b_labels, b_sizes, b_details, mapping=False)\n"
     "Score, or (score, [(i, j), ...]) when mapping is true. Buffers are array('i')."},
    {"path_counts", path_counts, METH_VARARGS,
     "path_counts(labels, sizes, n)\n"
     "visdup.templates.stm.label_paths of the first n nodes: the same histogram, or None\n"
     "when Python must answer (a size that is no int, or past what a tree holds)."},
    {"parents", stm_parents, METH_O, parents_doc},
    {"digest_bits", stm_digest_bits, METH_O,
     "digest_bits(n) -> the bits kept before\n"
     "Keep n bits of each subtree's digest where it chooses a slot (64: all): for tests of the\n"
     "field-by-field comparison of shapes, which the digest never replaces."},
    {"text_codes", stm_text_codes, METH_O, text_codes_doc},
    {"path_bounds", path_bounds, METH_VARARGS,
     "path_bounds(paths, others)\n"
     "visdup.templates.stm.stm_upper_bound(paths, b) for each histogram b of others, or None\n"
     "when Python must answer (a count that is not an int)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_stm",
                                    "Compiled Simple Tree Matching kernel.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__stm(void)
{
#ifndef _WIN32
    if (!kept_ready && pthread_key_create(&kept_key, kept_free) == 0) kept_ready = 1;
#endif
    return PyModule_Create(&module);
}
