/*
 * Exact ordered tree edit distance on marked trees (Zhang-Shasha), compiled.
 *
 * Costs are the metric of ALGORITHMS.md 1.7 on weighted nodes:
 *   delete [r] -> r, insert [r] -> r,
 *   relabel [r1]f -> [r2]g -> |r1 - r2| if f == g else max(r1, r2).
 *
 * Trees arrive flat in preorder: integer labels, non-negative marks and
 * subtree sizes (node itself included). They are converted once into C
 * arrays; the dynamic programme then runs without the GIL.
 *
 * Zhang-Shasha decomposes along leftmost paths. On web pages the small
 * <head> comes first and the huge <body> last, which is the worst case for
 * leftmost paths; mirroring both trees gives the same distance along
 * rightmost paths. The work of either direction is known in O(n) before
 * any DP (sum of keyroot subtree sizes, one product per direction), so the
 * cheaper one is chosen per pair.
 *
 * A keyroot whose subtree repeats an earlier one's (a menu, a teaser, a row that the
 * term's compression did not merge, not being next to its twin) runs no programme of its
 * own: its distances are the earlier one's, shifted (find_repeats). work() still counts
 * every pair: the budget it sets is the same whatever this saves.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_mix.h"

enum { DIR_AUTO = 0, DIR_LEFT = 1, DIR_RIGHT = 2 };

/* One input tree, preorder, converted to C. */
typedef struct {
    Py_ssize_t n;
    int64_t *label;
    int64_t *mark;
    int64_t *size;
} PreTree;

/* One tree laid out in the postorder of the chosen direction. */
typedef struct {
    Py_ssize_t n;
    int64_t *label; /* by postorder index */
    int64_t *cost;  /* mark, by postorder index */
    Py_ssize_t *lml; /* postorder index of the leftmost leaf of the subtree */
    Py_ssize_t *keyroots; /* increasing postorder indexes */
    Py_ssize_t nkeyroots;
    Py_ssize_t *pre;    /* preorder index of each postorder index */
    Py_ssize_t *repeat; /* by keyroot position: the earlier keyroot whose subtree this one's
                           repeats exactly (position), or -1 */
    Py_ssize_t *path;    /* every node, grouped by its leftmost leaf: the left paths */
    Py_ssize_t *path_at; /* by leftmost leaf l: where its path starts in `path`; one more */
} PostTree;

static void
pretree_free(PreTree *t)
{
    PyMem_Free(t->label);
    PyMem_Free(t->mark);
    PyMem_Free(t->size);
    t->label = t->mark = t->size = NULL;
}

static void
posttree_free(PostTree *t)
{
    free(t->label);
    free(t->cost);
    free(t->lml);
    free(t->keyroots);
    free(t->pre);
    free(t->repeat);
    free(t->path);
    free(t->path_at);
    t->label = t->cost = NULL;
    t->lml = t->keyroots = t->pre = t->repeat = t->path = t->path_at = NULL;
}

/* Reads one integer item of a buffer; returns 0 when the format is not a plain integer. */
static int
buffer_reader(const Py_buffer *view, char *kind)
{
    const char *fmt = view->format ? view->format : "B";
    if (*fmt == '@' || *fmt == '=') {
        fmt++;
    }
    if (fmt[0] == '\0' || fmt[1] != '\0') {
        return 0;
    }
    if (strchr("bBhHiIlLqQnN", fmt[0]) == NULL) {
        return 0;
    }
    if (view->itemsize != 1 && view->itemsize != 2 && view->itemsize != 4 &&
        view->itemsize != 8) {
        return 0;
    }
    *kind = fmt[0];
    return 1;
}

/*
 * Converts a sequence or an integer buffer into a fresh int64 array.
 * Returns the length, or -1 with an exception set.
 */
static Py_ssize_t
to_int64_array(PyObject *obj, const char *what, int64_t **out)
{
    Py_buffer view;
    *out = NULL;
    if (PyObject_CheckBuffer(obj) &&
        PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
        char kind;
        if (view.ndim <= 1 && buffer_reader(&view, &kind)) {
            Py_ssize_t n = view.len / view.itemsize;
            int is_signed = (kind >= 'a' && kind <= 'z');
            int64_t *arr = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
            if (arr == NULL) {
                PyBuffer_Release(&view);
                PyErr_NoMemory();
                return -1;
            }
            /* one loop per element type, the type chosen once: the compiler widens a whole
             * run at a time (a profile's int32 codes and marks are read for every bound) */
            const void *buf = view.buf;
#define WIDEN(T)                                                                           \
    do {                                                                                   \
        if ((uintptr_t)buf % sizeof(T) == 0) {                                             \
            const T *src = (const T *)buf;                                                 \
            for (Py_ssize_t i = 0; i < n; i++) {                                           \
                arr[i] = (int64_t)src[i];                                                  \
            }                                                                              \
        }                                                                                  \
        else { /* a view cut at an odd offset: read each item apart */                     \
            for (Py_ssize_t i = 0; i < n; i++) {                                           \
                T v;                                                                       \
                memcpy(&v, (const char *)buf + i * (Py_ssize_t)sizeof(T), sizeof(T));      \
                arr[i] = (int64_t)v;                                                       \
            }                                                                              \
        }                                                                                  \
    } while (0)
            if (view.itemsize == 1) {
                if (is_signed) {
                    WIDEN(int8_t);
                }
                else {
                    WIDEN(uint8_t);
                }
            }
            else if (view.itemsize == 2) {
                if (is_signed) {
                    WIDEN(int16_t);
                }
                else {
                    WIDEN(uint16_t);
                }
            }
            else if (view.itemsize == 4) {
                if (is_signed) {
                    WIDEN(int32_t);
                }
                else {
                    WIDEN(uint32_t);
                }
            }
            else if (is_signed) {
                memcpy(arr, buf, (size_t)n * sizeof(int64_t));
            }
            else {
                for (Py_ssize_t i = 0; i < n; i++) {
                    uint64_t u;
                    memcpy(&u, (const char *)buf + i * 8, 8);
                    if (u > (uint64_t)INT64_MAX) {
                        PyMem_Free(arr);
                        PyBuffer_Release(&view);
                        PyErr_Format(PyExc_OverflowError, "%s: value too large", what);
                        return -1;
                    }
                    arr[i] = (int64_t)u;
                }
            }
#undef WIDEN
            PyBuffer_Release(&view);
            *out = arr;
            return n;
        }
        PyBuffer_Release(&view);
    }
    else if (PyErr_Occurred()) {
        PyErr_Clear();
    }

    PyObject *seq = PySequence_Fast(obj, "expected a sequence of integers");
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *arr = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (arr == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(items[i]);
        if (v == -1 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s: item %zd is not an integer", what, i);
            }
            PyMem_Free(arr);
            Py_DECREF(seq);
            return -1;
        }
        arr[i] = (int64_t)v;
    }
    Py_DECREF(seq);
    *out = arr;
    return n;
}

/*
 * Checks that sizes describe one tree: every interval [i, i + size) nests in
 * its parent's and the root spans everything. Without this a bad size would
 * send the DP outside its arrays.
 */
static int
check_tree(const PreTree *t, const char *name)
{
    Py_ssize_t n = t->n;
    if (n == 0) {
        return 0;
    }
    if (t->size[0] != n) {
        PyErr_Format(PyExc_ValueError, "%s: root size %lld, expected %zd nodes",
                     name, (long long)t->size[0], n);
        return -1;
    }
    Py_ssize_t *ends = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t));
    if (ends == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = t->size[i];
        if (t->mark[i] < 0) {
            PyMem_Free(ends);
            PyErr_Format(PyExc_ValueError, "%s: negative mark at node %zd", name, i);
            return -1;
        }
        while (top > 0 && ends[top - 1] <= i) {
            top--;
        }
        if (s < 1 || s > n - i || (top > 0 && i + s > ends[top - 1])) {
            PyMem_Free(ends);
            PyErr_Format(PyExc_ValueError, "%s: inconsistent subtree size %lld at node %zd",
                         name, (long long)s, i);
            return -1;
        }
        if (i > 0 && top == 0) {
            PyMem_Free(ends);
            PyErr_Format(PyExc_ValueError, "%s: more than one root", name);
            return -1;
        }
        ends[top++] = i + (Py_ssize_t)s;
    }
    PyMem_Free(ends);
    return 0;
}

/*
 * Work of Zhang-Shasha along leftmost (or rightmost) paths for one tree: the
 * sum of the sizes of its keyroots. A node is a left keyroot when it is the
 * root or not the first child of its parent; a right keyroot when it is the
 * root or not the last child. The DP work of a pair is the product of the
 * two sums. Needs a valid tree.
 */
static void
keyroot_work(const PreTree *t, int64_t *left, int64_t *right, Py_ssize_t *stack)
{
    int64_t l = 0, r = 0;
    Py_ssize_t top = 0;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        while (top > 0 && stack[top - 1] + t->size[stack[top - 1]] <= i) {
            top--;
        }
        if (top == 0) {
            l += t->size[i];
            r += t->size[i];
        }
        else {
            Py_ssize_t p = stack[top - 1];
            if (i != p + 1) {
                l += t->size[i];
            }
            if (i + t->size[i] != p + t->size[p]) {
                r += t->size[i];
            }
        }
        stack[top++] = i;
    }
    *left = l;
    *right = r;
}

/* Lays a preorder tree out in postorder, of the tree itself (left) or of its mirror (right). */
static int
build_post(const PreTree *t, int right, PostTree *out)
{
    Py_ssize_t n = t->n;
    size_t cap = (size_t)(n > 0 ? n : 1);
    out->n = n;
    out->nkeyroots = 0;
    out->label = malloc(cap * sizeof(int64_t));
    out->cost = malloc(cap * sizeof(int64_t));
    out->lml = malloc(cap * sizeof(Py_ssize_t));
    out->keyroots = malloc(cap * sizeof(Py_ssize_t));
    out->pre = malloc(cap * sizeof(Py_ssize_t));
    out->repeat = out->path = out->path_at = NULL;
    Py_ssize_t *stack = malloc(cap * sizeof(Py_ssize_t));
    char *is_key = malloc(cap);
    if (!out->label || !out->cost || !out->lml || !out->keyroots || !out->pre || !stack ||
        !is_key) {
        free(stack);
        free(is_key);
        posttree_free(out);
        return -1;
    }
    Py_ssize_t top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        while (top > 0 && stack[top - 1] + t->size[stack[top - 1]] <= i) {
            top--;
        }
        Py_ssize_t depth = top;
        Py_ssize_t s = (Py_ssize_t)t->size[i];
        Py_ssize_t post, lml;
        int key;
        if (!right) {
            post = i - depth + s - 1;
            lml = i - depth;
            key = top == 0 || i != stack[top - 1] + 1;
        }
        else {
            post = n - 1 - i;
            lml = n - i - s;
            key = top == 0 ||
                  i + s != stack[top - 1] + (Py_ssize_t)t->size[stack[top - 1]];
        }
        out->label[post] = t->label[i];
        out->cost[post] = t->mark[i];
        out->lml[post] = lml;
        out->pre[post] = i;
        is_key[post] = (char)key;
        stack[top++] = i;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        if (is_key[k]) {
            out->keyroots[out->nkeyroots++] = k;
        }
    }
    free(stack);
    free(is_key);
    return 0;
}

/*
 * Keyroots whose subtree repeats an earlier keyroot's exactly (labels, marks and shape):
 * out->repeat[k] is the position of the first such keyroot, else -1; and each keyroot's
 * left path (every node lies on exactly one). The tree distance of any subtree against a
 * node of a repeat is that against the same node of the first, so a pair with a repeat
 * copies what the pair with the first computed (zhang_shasha). A subtree's identity is
 * hashed bottom-up in preorder and confirmed by comparing the arrays, so a hash collision
 * costs a comparison, never a wrong answer. Mirroring keeps repeats repeats.
 */
static int
find_repeats(const PreTree *t, PostTree *out)
{
    const Py_ssize_t n = t->n, nk = out->nkeyroots;
    out->repeat = malloc((size_t)(nk > 0 ? nk : 1) * sizeof(Py_ssize_t));
    uint64_t *hash = malloc((size_t)(n > 0 ? n : 1) * sizeof(uint64_t));
    Py_ssize_t slots = 16;
    while (slots < 2 * nk) {
        slots *= 2;
    }
    Py_ssize_t *table = malloc((size_t)slots * sizeof(Py_ssize_t)); /* keyroot positions */
    if (out->repeat == NULL || hash == NULL || table == NULL) {
        free(hash);
        free(table);
        return -1;
    }
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        uint64_t h = mix64((uint64_t)t->label[i]);
        h = mix64(h ^ (uint64_t)t->mark[i]);
        h = mix64(h ^ (uint64_t)t->size[i]);
        for (Py_ssize_t c = i + 1; c < i + t->size[i]; c += (Py_ssize_t)t->size[c]) {
            h = mix64(h ^ hash[c]);
        }
        hash[i] = h;
    }
    for (Py_ssize_t s = 0; s < slots; s++) {
        table[s] = -1;
    }
    for (Py_ssize_t k = 0; k < nk; k++) {
        const Py_ssize_t i = out->pre[out->keyroots[k]];
        const Py_ssize_t size = (Py_ssize_t)t->size[i];
        out->repeat[k] = -1;
        Py_ssize_t s = (Py_ssize_t)(hash[i] & (uint64_t)(slots - 1));
        for (;; s = (s + 1) & (slots - 1)) {
            const Py_ssize_t other = table[s];
            if (other < 0) {
                table[s] = k;
                break;
            }
            const Py_ssize_t j = out->pre[out->keyroots[other]];
            if (hash[j] == hash[i] && t->size[j] == size &&
                memcmp(t->label + i, t->label + j, (size_t)size * sizeof(int64_t)) == 0 &&
                memcmp(t->mark + i, t->mark + j, (size_t)size * sizeof(int64_t)) == 0 &&
                memcmp(t->size + i, t->size + j, (size_t)size * sizeof(int64_t)) == 0) {
                out->repeat[k] = other;
                break;
            }
        }
    }
    free(hash);
    free(table);
    /* The left path of a keyroot is every node whose leftmost leaf is the keyroot's (the
     * topmost of them is a keyroot: it is no first child), so the nodes grouped by their
     * leftmost leaf, in one counting pass, are the paths: path[path_at[l] .. path_at[l + 1]). */
    out->path = malloc((size_t)n * sizeof(Py_ssize_t));
    out->path_at = calloc((size_t)n + 1, sizeof(Py_ssize_t));
    Py_ssize_t *cursor = malloc((size_t)n * sizeof(Py_ssize_t));
    if (out->path == NULL || out->path_at == NULL || cursor == NULL) {
        free(cursor);
        return -1;
    }
    for (Py_ssize_t x = 0; x < n; x++) {
        out->path_at[out->lml[x] + 1]++;
    }
    for (Py_ssize_t l = 0; l < n; l++) {
        out->path_at[l + 1] += out->path_at[l];
        cursor[l] = out->path_at[l];
    }
    for (Py_ssize_t x = 0; x < n; x++) {
        out->path[cursor[out->lml[x]]++] = x;
    }
    free(cursor);
    return 0;
}

static inline int64_t
min3(int64_t a, int64_t b, int64_t c)
{
    int64_t m = a < b ? a : b;
    return m < c ? m : c;
}

/*
 * The Zhang-Shasha DP. td is n1 x n2 (tree distances of subtree pairs),
 * fd holds one forest-distance table at a time. Touches no Python object.
 */
static int64_t
zhang_shasha(const PostTree *a, const PostTree *b, int64_t *td, int64_t *fd)
{
    const Py_ssize_t n2 = b->n;
    for (Py_ssize_t ka = 0; ka < a->nkeyroots; ka++) {
        const Py_ssize_t k1 = a->keyroots[ka];
        const Py_ssize_t l1 = a->lml[k1];
        const Py_ssize_t rows = k1 - l1 + 2;
        if (a->repeat[ka] >= 0) {
            /* every pair of this keyroot's left path with the second tree: the earlier
             * one's rows, complete since its keyroot came first */
            const Py_ssize_t k0 = a->keyroots[a->repeat[ka]], l0 = a->lml[k0], shift = k1 - k0;
            for (Py_ssize_t p = a->path_at[l0]; p < a->path_at[l0 + 1]; p++) {
                const Py_ssize_t i = a->path[p];
                memcpy(td + (i + shift) * n2, td + i * n2, (size_t)n2 * sizeof(int64_t));
            }
            continue;
        }
        for (Py_ssize_t kb = 0; kb < b->nkeyroots; kb++) {
            const Py_ssize_t k2 = b->keyroots[kb];
            const Py_ssize_t l2 = b->lml[k2];
            const Py_ssize_t w = k2 - l2 + 2; /* row stride of fd for this pair */
            if (b->repeat[kb] >= 0) {
                /* the pairs of the two left paths: those of the earlier keyroot, shifted */
                const Py_ssize_t k0 = b->keyroots[b->repeat[kb]], l0 = b->lml[k0];
                const Py_ssize_t shift = k2 - k0;
                for (Py_ssize_t p = a->path_at[l1]; p < a->path_at[l1 + 1]; p++) {
                    int64_t *tdrow = td + a->path[p] * n2;
                    for (Py_ssize_t q = b->path_at[l0]; q < b->path_at[l0 + 1]; q++) {
                        tdrow[b->path[q] + shift] = tdrow[b->path[q]];
                    }
                }
                continue;
            }
            fd[0] = 0;
            for (Py_ssize_t y = 1; y < w; y++) {
                fd[y] = fd[y - 1] + b->cost[l2 + y - 1];
            }
            for (Py_ssize_t x = 1; x < rows; x++) {
                const Py_ssize_t i = l1 + x - 1;
                const Py_ssize_t li = a->lml[i];
                const int64_t ci = a->cost[i];
                const int64_t lab_i = a->label[i];
                int64_t *row = fd + x * w;
                const int64_t *prev = row - w;
                int64_t *tdrow = td + i * n2;
                row[0] = prev[0] + ci;
                if (li == l1) {
                    for (Py_ssize_t y = 1; y < w; y++) {
                        const Py_ssize_t j = l2 + y - 1;
                        const int64_t cj = b->cost[j];
                        if (b->lml[j] == l2) {
                            int64_t ren;
                            if (b->label[j] == lab_i) {
                                ren = ci > cj ? ci - cj : cj - ci;
                            }
                            else {
                                ren = ci > cj ? ci : cj;
                            }
                            int64_t v = min3(prev[y] + ci, row[y - 1] + cj, prev[y - 1] + ren);
                            row[y] = v;
                            tdrow[j] = v;
                        }
                        else {
                            const int64_t *base = fd + (b->lml[j] - l2);
                            row[y] = min3(prev[y] + ci, row[y - 1] + cj,
                                          base[0] + tdrow[j]);
                        }
                    }
                }
                else {
                    const int64_t *sub = fd + (li - l1) * w;
                    for (Py_ssize_t y = 1; y < w; y++) {
                        const Py_ssize_t j = l2 + y - 1;
                        const int64_t cj = b->cost[j];
                        row[y] = min3(prev[y] + ci, row[y - 1] + cj,
                                      sub[b->lml[j] - l2] + tdrow[j]);
                    }
                }
            }
        }
    }
    return td[(a->n - 1) * n2 + (n2 - 1)];
}

static int
load_tree(PyObject *labels, PyObject *marks, PyObject *sizes, const char *name, PreTree *t)
{
    Py_ssize_t nl, nm, ns;
    t->label = t->mark = t->size = NULL;
    nl = to_int64_array(labels, "labels", &t->label);
    if (nl < 0) {
        goto fail;
    }
    nm = to_int64_array(marks, "marks", &t->mark);
    if (nm < 0) {
        goto fail;
    }
    ns = to_int64_array(sizes, "sizes", &t->size);
    if (ns < 0) {
        goto fail;
    }
    if (nl != nm || nl != ns) {
        PyErr_Format(PyExc_ValueError, "%s: labels, marks and sizes differ in length (%zd, %zd, %zd)",
                     name, nl, nm, ns);
        goto fail;
    }
    t->n = nl;
    return 0;
fail:
    pretree_free(t);
    return -1;
}

static int64_t
total_mark(const PreTree *t)
{
    int64_t s = 0;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        s += t->mark[i];
    }
    return s;
}

PyDoc_STRVAR(distance_doc,
"distance(labels1, marks1, sizes1, labels2, marks2, sizes2, max_nodes, direction=0) -> int\n"
"\n"
"Exact ordered tree edit distance of two marked trees given flat in preorder.\n"
"direction: 0 picks the cheaper of leftmost/rightmost paths, 1 forces leftmost,\n"
"2 forces rightmost. Raises ValueError when a tree has more than max_nodes nodes.");

static PyObject *
ted_distance(PyObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"labels1", "marks1", "sizes1", "labels2", "marks2",
                             "sizes2", "max_nodes", "direction", NULL};
    PyObject *l1, *m1, *s1, *l2, *m2, *s2;
    Py_ssize_t max_nodes;
    int direction = DIR_AUTO;
    PreTree a = {0}, b = {0};
    PostTree pa = {0}, pb = {0};
    int64_t *td = NULL, *fd = NULL;
    PyObject *result = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOOn|i:distance", kwlist, &l1, &m1, &s1,
                                     &l2, &m2, &s2, &max_nodes, &direction)) {
        return NULL;
    }
    if (direction < DIR_AUTO || direction > DIR_RIGHT) {
        PyErr_SetString(PyExc_ValueError, "direction must be 0 (auto), 1 (left) or 2 (right)");
        return NULL;
    }
    if (load_tree(l1, m1, s1, "first tree", &a) < 0) {
        return NULL;
    }
    if (load_tree(l2, m2, s2, "second tree", &b) < 0) {
        goto done;
    }
    if (a.n > max_nodes || b.n > max_nodes) {
        PyErr_Format(PyExc_ValueError, "tree too large: %zd and %zd nodes, cap is %zd",
                     a.n, b.n, max_nodes);
        goto done;
    }
    if (check_tree(&a, "first tree") < 0 || check_tree(&b, "second tree") < 0) {
        goto done;
    }
    if (a.n == 0 || b.n == 0) {
        result = PyLong_FromLongLong((long long)(total_mark(&a) + total_mark(&b)));
        goto done;
    }

    int right;
    {
        Py_ssize_t cap = a.n > b.n ? a.n : b.n;
        Py_ssize_t *stack = PyMem_Malloc((size_t)cap * sizeof(Py_ssize_t));
        if (stack == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        int64_t al, ar, bl, br;
        keyroot_work(&a, &al, &ar, stack);
        keyroot_work(&b, &bl, &br, stack);
        PyMem_Free(stack);
        if (direction == DIR_AUTO) {
            /* products fit: each sum is at most n * n with n below the cap */
            right = (double)ar * (double)br < (double)al * (double)bl;
        }
        else {
            right = direction == DIR_RIGHT;
        }
    }

    size_t cells = (size_t)a.n * (size_t)b.n;
    size_t fcells = (size_t)(a.n + 1) * (size_t)(b.n + 1);
    if (cells / (size_t)a.n != (size_t)b.n || fcells > SIZE_MAX / sizeof(int64_t)) {
        PyErr_NoMemory();
        goto done;
    }
    if (build_post(&a, right, &pa) < 0 || build_post(&b, right, &pb) < 0 ||
        find_repeats(&a, &pa) < 0 || find_repeats(&b, &pb) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    td = malloc(cells * sizeof(int64_t));
    fd = malloc(fcells * sizeof(int64_t));
    if (td == NULL || fd == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t d;
    Py_BEGIN_ALLOW_THREADS
    d = zhang_shasha(&pa, &pb, td, fd);
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong((long long)d);

done:
    free(td);
    free(fd);
    posttree_free(&pa);
    posttree_free(&pb);
    pretree_free(&a);
    pretree_free(&b);
    return result;
}

PyDoc_STRVAR(work_doc,
"work(sizes) -> (left, right)\n"
"\n"
"Zhang-Shasha work factors of one tree (sum of keyroot subtree sizes) along\n"
"leftmost and rightmost paths. The DP of a pair costs the product of the two\n"
"trees' factors in the chosen direction.");

static PyObject *
ted_work(PyObject *self, PyObject *arg)
{
    PreTree t = {0};
    Py_ssize_t n = to_int64_array(arg, "sizes", &t.size);
    if (n < 0) {
        return NULL;
    }
    t.n = n;
    t.mark = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
    PyObject *result = NULL;
    if (t.mark == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (check_tree(&t, "tree") < 0) {
        goto done;
    }
    Py_ssize_t *stack = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(Py_ssize_t));
    if (stack == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t l, r;
    keyroot_work(&t, &l, &r, stack);
    PyMem_Free(stack);
    result = Py_BuildValue("(LL)", (long long)l, (long long)r);
done:
    pretree_free(&t);
    return result;
}

PyDoc_STRVAR(sequence_doc,
"sequence_distance(labels1, marks1, labels2, marks2, limit=-1) -> int\n"
"\n"
"Edit distance of two node sequences under the tree costs: delete or insert [r]\n"
"costs r, relabel costs |r1 - r2| on equal labels, else max(r1, r2). A tree edit\n"
"mapping keeps the preorder, so on two trees' preorder sequences it is a lower bound\n"
"on their tree edit distance, in O(n1 n2) time and O(n2) memory. With limit >= 0 the\n"
"answer is min(distance, limit + 1): only cells that a path of cost <= limit can reach\n"
"are filled (a band around the diagonal of the weighted prefixes), and the programme\n"
"stops at the first row whose cells all exceed limit.");

/* Cells no path of cost <= limit reaches; small enough that adding marks cannot overflow. */
#define SEQ_INF (INT64_MAX / 4)

static int64_t
sequence_dp(Py_ssize_t n1, const int64_t *l1, const int64_t *m1, Py_ssize_t n2,
            const int64_t *l2, const int64_t *m2, int64_t *row, int64_t limit)
{
    row[0] = 0;
    for (Py_ssize_t j = 0; j < n2; j++) {
        row[j + 1] = row[j] + m2[j];
    }
    if (limit < 0) {
        for (Py_ssize_t i = 0; i < n1; i++) {
            const int64_t li = l1[i], ri = m1[i];
            int64_t diag = row[0];
            row[0] += ri;
            for (Py_ssize_t j = 0; j < n2; j++) {
                const int64_t rj = m2[j], up = row[j + 1];
                int64_t v =
                    diag + (li == l2[j] ? (ri > rj ? ri - rj : rj - ri) : (ri > rj ? ri : rj));
                if (up + ri < v) {
                    v = up + ri;
                }
                if (row[j] + rj < v) {
                    v = row[j] + rj;
                }
                diag = up;
                row[j + 1] = v;
            }
        }
        return row[n2];
    }
    /*
     * Band: a path through cell (i, j) costs at least |A - B| + |(WA - A) - (WB - B)| with
     * A, B the weights of the prefixes of lengths i and j (any alignment of two sequences
     * costs at least their weight difference). That is <= limit exactly when
     * 2B lies in [2A + D - limit, 2A + D + limit], D = WB - WA: an interval of j that only
     * moves right as i grows. Outside it a cell holds SEQ_INF.
     *
     * Inside it, a cell's value v bounds the prefix's cost better than |A - B|: a cell with
     * v + |(WA - A) - (WB - B)| > limit lies on no path of cost <= limit either, and holds
     * SEQ_INF too. Every cell of a path of cost <= limit keeps a value no larger than the
     * path's cost so far (by induction along the path), so such a path is never cut, and
     * the answer stays min(distance, limit + 1). The finite cells of a row then span
     * [first, last]; the next row's cells left of ``first`` (but the first column, which
     * deletes a's prefix) and right of ``last + 1`` can only be reached from the left, and
     * stay SEQ_INF once a cell there is.
     */
    int64_t wa = 0;
    for (Py_ssize_t i = 0; i < n1; i++) {
        wa += m1[i];
    }
    const int64_t wb = row[n2], d = wb - wa;
    if ((d > 0 ? d : -d) > limit) {
        return limit + 1;
    }
    /* prefix weights of the second sequence are row[] before the first row is filled */
    int64_t *pb = malloc((size_t)(n2 + 1) * sizeof(int64_t)); /* no GIL here */
    if (pb == NULL) {
        return -1;
    }
    memcpy(pb, row, (size_t)(n2 + 1) * sizeof(int64_t));
    Py_ssize_t lo = 0, hi = -1;
    int64_t a = 0;
    for (Py_ssize_t j = 0; j <= n2; j++) {
        int64_t twice = 2 * pb[j];
        if (twice < d - limit) {
            row[j] = SEQ_INF;
            lo = j + 1;
        }
        else if (twice > d + limit) {
            row[j] = SEQ_INF;
        }
        else {
            hi = j;
        }
    }
    Py_ssize_t first = lo, last = hi; /* the finite cells of the row before */
    int64_t result = SEQ_INF;
    for (Py_ssize_t i = 0; i < n1 && lo <= hi; i++) {
        const int64_t li = l1[i], ri = m1[i];
        a += ri;
        const int64_t rest = wa - a; /* weight of a's suffix after this row */
        const Py_ssize_t old_lo = lo;
        while (lo <= n2 && 2 * pb[lo] < 2 * a + d - limit) {
            lo++;
        }
        while (hi < n2 && 2 * pb[hi + 1] <= 2 * a + d + limit) {
            hi++;
        }
        if (lo > hi) {
            break;
        }
        Py_ssize_t new_first = -1, new_last = -1;
        int64_t left = SEQ_INF;
        Py_ssize_t j = lo;
        int64_t diag = SEQ_INF;
        if (j == 0) {
            const int64_t slack = rest - wb;
            int64_t v = a;
            if (v + (slack > 0 ? slack : -slack) > limit) {
                v = SEQ_INF;
            }
            else {
                new_first = new_last = 0;
            }
            diag = row[0]; /* the row before's, read before this row's replaces it */
            row[0] = left = v;
            j = 1;
        }
        if (left >= SEQ_INF && j < first) {
            j = first; /* the cells before hold SEQ_INF, and so would this row's */
            diag = SEQ_INF; /* row[first - 1], the row before's */
        }
        else if (j > 1 || lo > 0) {
            diag = row[j - 1];
        }
        for (; j <= hi; j++) {
            if (left >= SEQ_INF && j > last + 1) {
                break; /* reached from the left only: SEQ_INF, as row[] already holds */
            }
            const int64_t rj = m2[j - 1], up = row[j], lj = l2[j - 1];
            int64_t v =
                diag + (li == lj ? (ri > rj ? ri - rj : rj - ri) : (ri > rj ? ri : rj));
            if (up + ri < v) {
                v = up + ri;
            }
            if (left + rj < v) {
                v = left + rj;
            }
            const int64_t slack = rest - (wb - pb[j]);
            if (v + (slack > 0 ? slack : -slack) > limit) {
                v = SEQ_INF;
            }
            else {
                if (new_first < 0) {
                    new_first = j;
                }
                new_last = j;
            }
            diag = up;
            row[j] = left = v;
        }
        for (Py_ssize_t k = old_lo; k < lo; k++) {
            row[k] = SEQ_INF; /* left the band: the next row must not read them */
        }
        if (new_first < 0) {
            break; /* no cell of this row lies on a path of cost <= limit */
        }
        first = new_first;
        last = new_last;
        if (i == n1 - 1 && hi == n2) {
            result = row[n2];
        }
    }
    if (n1 == 0 && lo == 0 && hi == n2) {
        result = row[n2];
    }
    free(pb);
    return result > limit ? limit + 1 : result;
}

/*
 * The banded programme of sequence_dp in 32-bit cells, a row in three passes: what a row's
 * cells get from the row before (a diagonal step or a deletion), for all its cells at once;
 * the insertions along the row, as a running minimum; then the cut of the cells no path of
 * cost <= limit crosses. Only the running minimum carries work from one cell to the next, one
 * comparison a cell, so the other passes run several cells at a time (with SSE4.1, all three
 * run fused, four cells a step). The answer is sequence_dp's, min(distance, limit + 1).
 *
 * Why the passes give that answer: a cell's value is the least cost of a path to it, so
 * v(i, j) = min(t(i, j), v(i, j - 1) + m2[j - 1]), t(i, j) the cheaper of the two steps from
 * row i - 1; with pb the prefix weights of the second sequence, v - pb[j] is the running
 * minimum of t - pb. The cut is sequence_dp's (v + |(WA - A) - (WB - B)| > limit), taken after
 * the running minimum instead of cell by cell: a cell reached along the row from a cut one
 * fails the test itself, since the step adds at least what the weight difference can lose. A
 * cut cell holds SEQ32_INF, far enough below INT32_MAX that an added mark cannot overflow, and
 * so does every cell of a row outside its finite span: the next row reads only that span and
 * the cells just past it, where insertions may go on.
 */
#define SEQ32_INF (1 << 29)
/* Weights (sums of marks) past this are left to sequence_dp's 64-bit cells. */
#define SEQ32_MAX_WEIGHT (1 << 26)

static inline int32_t
abs32(int32_t x)
{
    return x < 0 ? -x : x;
}

/* Cells s..e of row i (label li, mark ri) from the row before, in the three passes. */
static void
seq32_row(Py_ssize_t s, Py_ssize_t e, int32_t li, int32_t ri, int32_t run, int32_t rest_less_wb,
          int32_t limit, const int32_t *restrict l2, const int32_t *restrict m2,
          const int32_t *restrict pb, const int32_t *restrict prev, int32_t *restrict t,
          int32_t *restrict row)
{
    for (Py_ssize_t j = s; j <= e; j++) { /* the steps from the row before, less pb[j] */
        const int32_t rj = m2[j - 1];
        const int32_t diff = abs32(ri - rj), most = ri > rj ? ri : rj;
        const int32_t diag = prev[j - 1] + (l2[j - 1] == li ? diff : most);
        const int32_t up = prev[j] + ri;
        t[j] = (diag < up ? diag : up) - pb[j];
    }
    for (Py_ssize_t j = s; j <= e; j++) { /* the insertions: a running minimum */
        run = t[j] < run ? t[j] : run;
        row[j] = run + pb[j];
    }
    for (Py_ssize_t j = s; j <= e; j++) { /* the cut */
        const int32_t v = row[j];
        row[j] = v > limit - abs32(rest_less_wb + pb[j]) ? SEQ32_INF : v;
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define SEQ32_SSE41 1

static int
have_sse41(void)
{
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("sse4.1") ? 1 : 0;
    }
    return known;
}

/* seq32_row four cells a step in SSE4.1's lanes: the running minimum within four lanes in two
 * shifts, then the carry from the four before; the other passes carry nothing. */
__attribute__((target("sse4.1"))) static void
seq32_row_sse41(Py_ssize_t s, Py_ssize_t e, int32_t li, int32_t ri, int32_t run,
                int32_t rest_less_wb, int32_t limit, const int32_t *restrict l2,
                const int32_t *restrict m2, const int32_t *restrict pb,
                const int32_t *restrict prev, int32_t *restrict t, int32_t *restrict row)
{
    const __m128i inf = _mm_set1_epi32(SEQ32_INF), vli = _mm_set1_epi32(li);
    const __m128i vri = _mm_set1_epi32(ri), vrest = _mm_set1_epi32(rest_less_wb);
    const __m128i vlimit = _mm_set1_epi32(limit);
    __m128i carry = _mm_set1_epi32(run);
    Py_ssize_t j = s;
    for (; j + 3 <= e; j += 4) {
        const __m128i rj = _mm_loadu_si128((const __m128i *)(m2 + j - 1));
        const __m128i same = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(l2 + j - 1)), vli);
        const __m128i sub = _mm_blendv_epi8(_mm_max_epi32(vri, rj),
                                            _mm_abs_epi32(_mm_sub_epi32(vri, rj)), same);
        const __m128i diag = _mm_add_epi32(_mm_loadu_si128((const __m128i *)(prev + j - 1)), sub);
        const __m128i up = _mm_add_epi32(_mm_loadu_si128((const __m128i *)(prev + j)), vri);
        const __m128i pbj = _mm_loadu_si128((const __m128i *)(pb + j));
        __m128i x = _mm_sub_epi32(_mm_min_epi32(diag, up), pbj);
        x = _mm_min_epi32(x, _mm_alignr_epi8(x, inf, 12)); /* [inf, x0, x1, x2] */
        x = _mm_min_epi32(x, _mm_alignr_epi8(x, inf, 8));  /* [inf, inf, x0, x1] */
        x = _mm_min_epi32(x, carry);
        carry = _mm_shuffle_epi32(x, 0xFF);
        const __m128i v = _mm_add_epi32(x, pbj);
        const __m128i room = _mm_sub_epi32(vlimit, _mm_abs_epi32(_mm_add_epi32(vrest, pbj)));
        _mm_storeu_si128((__m128i *)(row + j), _mm_blendv_epi8(v, inf, _mm_cmpgt_epi32(v, room)));
    }
    if (j <= e) {
        seq32_row(j, e, li, ri, _mm_cvtsi128_si32(carry), rest_less_wb, limit, l2, m2, pb, prev,
                  t, row);
    }
}
#endif

static int64_t
sequence_band32(Py_ssize_t n1, const int64_t *l1, const int64_t *m1, Py_ssize_t n2,
                const int64_t *l2_64, const int64_t *m2_64, int64_t limit64)
{
    int64_t wa64 = 0, wb64 = 0;
    for (Py_ssize_t i = 0; i < n1; i++) {
        wa64 += m1[i];
    }
    for (Py_ssize_t j = 0; j < n2; j++) {
        wb64 += m2_64[j];
    }
    if (wa64 + wb64 >= SEQ32_MAX_WEIGHT || limit64 >= SEQ32_MAX_WEIGHT) {
        return -2;
    }
    for (Py_ssize_t i = 0; i < n1; i++) {
        if (l1[i] < INT32_MIN || l1[i] > INT32_MAX) {
            return -2;
        }
    }
    const int32_t limit = (int32_t)limit64, wa = (int32_t)wa64, wb = (int32_t)wb64;
    if (abs32(wb - wa) > limit) {
        return limit64 + 1;
    }
    const size_t cells = (size_t)n2 + 2;
    int32_t *mem = malloc(6 * cells * sizeof(int32_t)); /* no GIL here */
    if (mem == NULL) {
        return -1;
    }
    /* column j (j >= 1) of a row is the second sequence's item j - 1: l2[j - 1], m2[j - 1] */
    int32_t *l2 = mem, *m2 = mem + cells, *pb = mem + 2 * cells, *t = mem + 3 * cells;
    int32_t *prev = mem + 4 * cells, *cur = mem + 5 * cells;
    pb[0] = 0;
    for (Py_ssize_t j = 0; j < n2; j++) {
        if (l2_64[j] < INT32_MIN || l2_64[j] > INT32_MAX) {
            free(mem);
            return -2;
        }
        l2[j] = (int32_t)l2_64[j];
        m2[j] = (int32_t)m2_64[j];
        pb[j + 1] = pb[j] + m2[j];
    }
    /* row 0: the second sequence's prefixes inserted */
    Py_ssize_t first = -1, last = -1;
    for (Py_ssize_t j = 0; j <= n2; j++) {
        const int32_t v = pb[j];
        if (v > limit - abs32(wa - wb + pb[j])) {
            prev[j] = SEQ32_INF;
        }
        else {
            prev[j] = v;
            if (first < 0) {
                first = j;
            }
            last = j;
        }
        cur[j] = SEQ32_INF;
    }
    prev[n2 + 1] = cur[n2 + 1] = SEQ32_INF;
    Py_ssize_t cur_first = 1, cur_last = 0; /* cur's finite span (none yet) */
    int32_t a = 0;
    for (Py_ssize_t i = 0; i < n1 && first >= 0; i++) {
        const int32_t li = (int32_t)l1[i], ri = (int32_t)m1[i];
        a += ri;
        const int32_t rest_less_wb = (wa - a) - wb;
        /* column 0: the first sequence's prefix deleted */
        int32_t c0 = prev[0] + ri;
        if (c0 > limit - abs32(rest_less_wb)) {
            c0 = SEQ32_INF;
        }
        Py_ssize_t s = first > 1 ? first : 1, e = last + 1 < n2 ? last + 1 : n2;
        if (c0 < SEQ32_INF) {
            s = 1; /* the running minimum starts at column 0 (prev is SEQ32_INF before first) */
        }
        /* cur's span of two rows ago, outside what this row writes, goes back to SEQ32_INF */
        for (Py_ssize_t j = cur_first > 1 ? cur_first : 1; j <= cur_last && j < s; j++) {
            cur[j] = SEQ32_INF;
        }
        cur[0] = c0;
        if (s <= e) {
            const int32_t run = cur[s - 1] - pb[s - 1];
#ifdef SEQ32_SSE41
            if (have_sse41()) {
                seq32_row_sse41(s, e, li, ri, run, rest_less_wb, limit, l2, m2, pb, prev, t,
                                cur);
            }
            else
#endif
            {
                seq32_row(s, e, li, ri, run, rest_less_wb, limit, l2, m2, pb, prev, t, cur);
            }
            /* past the row before's span only insertions lead on, until the cut */
            while (e < n2 && cur[e] < SEQ32_INF) {
                const int32_t v = cur[e] + m2[e];
                if (v > limit - abs32(rest_less_wb + pb[e + 1])) {
                    break;
                }
                cur[++e] = v;
            }
        }
        else {
            e = 0;
        }
        for (Py_ssize_t j = e + 1 > cur_first ? e + 1 : cur_first; j <= cur_last; j++) {
            cur[j] = SEQ32_INF;
        }
        Py_ssize_t f = -1, l = -1;
        if (c0 < SEQ32_INF) {
            f = l = 0;
        }
        for (Py_ssize_t j = s; j <= e; j++) {
            if (cur[j] < SEQ32_INF) {
                if (f < 0) {
                    f = j;
                }
                break;
            }
        }
        for (Py_ssize_t j = e; j >= s; j--) {
            if (cur[j] < SEQ32_INF) {
                l = j;
                break;
            }
        }
        /* swap: the row before becomes the buffer two rows ago, with its span */
        int32_t *tmp = prev;
        prev = cur;
        cur = tmp;
        cur_first = first;
        cur_last = last;
        first = f;
        last = l;
    }
    int64_t result = limit64 + 1;
    if (first >= 0 && prev[n2] < SEQ32_INF && prev[n2] <= limit) {
        result = prev[n2];
    }
    free(mem);
    return result;
}

static PyObject *
ted_sequence_distance(PyObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"labels1", "marks1", "labels2", "marks2", "limit", NULL};
    PyObject *ol1, *om1, *ol2, *om2;
    long long limit = -1;
    int64_t *l1 = NULL, *m1 = NULL, *l2 = NULL, *m2 = NULL, *row = NULL;
    PyObject *result = NULL;
    Py_ssize_t n1, n2;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO|L:sequence_distance", kwlist, &ol1,
                                     &om1, &ol2, &om2, &limit)) {
        return NULL;
    }
    if ((n1 = to_int64_array(ol1, "labels1", &l1)) < 0 ||
        to_int64_array(om1, "marks1", &m1) != n1 ||
        (n2 = to_int64_array(ol2, "labels2", &l2)) < 0 ||
        to_int64_array(om2, "marks2", &m2) != n2) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "labels and marks differ in length");
        }
        goto done;
    }
    for (Py_ssize_t i = 0; i < n1 || i < n2; i++) {
        if ((i < n1 && m1[i] < 0) || (i < n2 && m2[i] < 0)) {
            PyErr_Format(PyExc_ValueError, "negative mark at position %zd", i);
            goto done;
        }
    }
    int64_t d = -2;
    Py_BEGIN_ALLOW_THREADS
    if (limit >= 0) {
        d = sequence_band32(n1, l1, m1, n2, l2, m2, (int64_t)limit);
    }
    if (d == -2) { /* no limit, or weights past 32-bit cells: the 64-bit programme's row */
        row = malloc((size_t)(n2 + 1) * sizeof(int64_t));
        d = row != NULL ? sequence_dp(n1, l1, m1, n2, l2, m2, row, (int64_t)limit) : -1;
    }
    Py_END_ALLOW_THREADS
    if (d < 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyLong_FromLongLong((long long)d);
done:
    PyMem_Free(l1);
    PyMem_Free(m1);
    PyMem_Free(l2);
    PyMem_Free(m2);
    free(row);
    return result;
}

/* ------------------------------------------------------------------ profile bounds
 *
 * best_similarities(mine, others): Profile.best_similarity of one profile against each of
 * many, in one call (a page ranks a hundred candidates by it). A profile is read through its
 * attributes: ``weights`` and ``counts`` (lists of int by label code), ``weight`` and
 * ``count`` (their sums). None when a number does not fit 64 bits: Python answers then.
 */
/* Sums at most this large keep every bound and quotient below exact doubles (2**53). */
#define EXACT_DOUBLE (1LL << 50)

typedef struct {
    PyObject *weights, *counts; /* borrowed from the profile, which the caller holds */
    long long weight, count;
} ProfileView;

static int
profile_view(PyObject *profile, ProfileView *out)
{
    /* the attributes are the profile's own slots: the references stay valid while it lives */
    PyObject *w = PyObject_GetAttrString(profile, "weights");
    PyObject *c = w ? PyObject_GetAttrString(profile, "counts") : NULL;
    PyObject *ws = c ? PyObject_GetAttrString(profile, "weight") : NULL;
    PyObject *cs = ws ? PyObject_GetAttrString(profile, "count") : NULL;
    int rc = -1;
    if (cs != NULL) {
        if (!PyList_Check(w) || !PyList_Check(c)) {
            PyErr_SetString(PyExc_TypeError, "profile: weights and counts must be lists");
        } else {
            out->weight = PyLong_AsLongLong(ws);
            out->count = out->weight == -1 && PyErr_Occurred() ? -1 : PyLong_AsLongLong(cs);
            out->weights = w;
            out->counts = c;
            rc = PyErr_Occurred() ? -1 : 0;
        }
    }
    Py_XDECREF(w);
    Py_XDECREF(c);
    Py_XDECREF(ws);
    Py_XDECREF(cs);
    return rc;
}

/* sum_f |A_f - B_f| of two histograms, the shorter one padded with zeros; -1 on error. */
static long long
histogram_spread(PyObject *a, PyObject *b)
{
    Py_ssize_t na = PyList_GET_SIZE(a), nb = PyList_GET_SIZE(b), n = na > nb ? na : nb;
    long long total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        long long x = i < na ? PyLong_AsLongLong(PyList_GET_ITEM(a, i)) : 0;
        long long y = i < nb ? PyLong_AsLongLong(PyList_GET_ITEM(b, i)) : 0;
        if ((x == -1 || y == -1) && PyErr_Occurred()) return -1;
        total += x > y ? x - y : y - x;
    }
    return total;
}

static PyObject *
ted_best_similarities(PyObject *self, PyObject *args)
{
    PyObject *mine_obj, *others_obj;
    if (!PyArg_ParseTuple(args, "OO", &mine_obj, &others_obj)) return NULL;
    PyObject *others = PySequence_Fast(others_obj, "best_similarities: others must be a sequence");
    if (others == NULL) return NULL;
    ProfileView mine;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(others);
    PyObject *out = NULL;
    if (profile_view(mine_obj, &mine) < 0) goto overflow_or_error;
    out = PyList_New(n);
    if (out == NULL) goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        ProfileView other;
        if (profile_view(PySequence_Fast_GET_ITEM(others, k), &other) < 0) goto overflow_or_error;
        if (mine.weight > EXACT_DOUBLE || other.weight > EXACT_DOUBLE || mine.count > EXACT_DOUBLE ||
            other.count > EXACT_DOUBLE || mine.weight < 0 || other.weight < 0 || mine.count < 0 ||
            other.count < 0) {
            PyErr_SetString(PyExc_OverflowError, "profile sums past 2**50");
            goto overflow_or_error;
        }
        long long total = mine.weight + other.weight;
        double value = 1.0;
        if (total != 0) {
            long long sw = histogram_spread(mine.weights, other.weights);
            long long sc = sw < 0 ? -1 : histogram_spread(mine.counts, other.counts);
            if (sc < 0) goto overflow_or_error;
            long long dw = mine.weight - other.weight, dc = mine.count - other.count;
            long long bw = (sw + (dw < 0 ? -dw : dw)) / 2, bc = (sc + (dc < 0 ? -dc : dc)) / 2;
            long long bound = bw > bc ? bw : bc;
            value = 1.0 - (double)bound / (double)total;
        }
        PyObject *f = PyFloat_FromDouble(value);
        if (f == NULL) goto done;
        PyList_SET_ITEM(out, k, f);
    }
    Py_DECREF(others);
    return out;
overflow_or_error:
    if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        Py_XDECREF(out);
        Py_DECREF(others);
        Py_RETURN_NONE;
    }
done:
    Py_XDECREF(out);
    Py_DECREF(others);
    return NULL;
}

/* ------------------------------------------------------------------ sequence similarities
 *
 * sequence_similarities(mine, others, at_least, known): Profile.sequence_similarity of one
 * profile against each of many, the pairs already measured answered from ``known`` (the
 * profile pair's key -> the distance, or minus a number the distance reaches) and every new
 * measure put there, as the Python method does one pair at a time. A profile is read through
 * ``codes`` and ``marks`` (int buffers), ``weight`` and ``serial``. None where a number does
 * not fit 64 bits, or the similarity is past exact doubles: Python answers then.
 */

static double
cmp_of(long long delta, long long total)
{
    return 1.0 - (double)delta / (double)total;
}

/* bounds.distance_limit: the largest distance whose cmp still reaches at_least */
static long long
distance_limit_of(double at_least, long long total)
{
    double start = (1.0 - at_least) * (double)total;
    long long limit = start > 0 ? (long long)start : 0;
    while (cmp_of(limit + 1, total) >= at_least) {
        limit++;
    }
    while (limit > 0 && cmp_of(limit, total) < at_least) {
        limit--;
    }
    return limit;
}

typedef struct {
    int64_t *codes, *marks;
    Py_ssize_t n;
    long long weight, serial;
} SequenceView;

/* 1: read; 0: a number past 64 bits (Python answers); -1: an error */
static int
sequence_view(PyObject *profile, SequenceView *out)
{
    out->codes = out->marks = NULL;
    PyObject *w = PyObject_GetAttrString(profile, "weight");
    PyObject *s = w ? PyObject_GetAttrString(profile, "serial") : NULL;
    PyObject *c = s ? PyObject_GetAttrString(profile, "codes") : NULL;
    PyObject *m = c ? PyObject_GetAttrString(profile, "marks") : NULL;
    int rc = -1;
    if (m != NULL) {
        int overflow = 0, overflow2 = 0;
        out->weight = PyLong_AsLongLongAndOverflow(w, &overflow);
        out->serial = PyLong_AsLongLongAndOverflow(s, &overflow2);
        if (PyErr_Occurred()) {
            rc = -1;
        } else if (overflow || overflow2 || out->weight < 0 || out->weight > EXACT_DOUBLE ||
                   out->serial < 0) {
            rc = 0;
        } else if ((out->n = to_int64_array(c, "codes", &out->codes)) >= 0 &&
                   to_int64_array(m, "marks", &out->marks) == out->n) {
            rc = 1;
        } else if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "profile: codes and marks differ in length");
        }
    }
    if (rc == -1 && PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear(); /* a mark past 64 bits */
        rc = 0;
    }
    Py_XDECREF(w);
    Py_XDECREF(s);
    Py_XDECREF(c);
    Py_XDECREF(m);
    return rc;
}

static void
sequence_view_free(SequenceView *v)
{
    PyMem_Free(v->codes);
    PyMem_Free(v->marks);
    v->codes = v->marks = NULL;
}

/* the key of a profile pair in ``known``: (smaller serial << 64) | larger serial */
static PyObject *
pair_key(long long a, long long b)
{
    unsigned long long lo = (unsigned long long)(a < b ? a : b);
    unsigned long long hi = (unsigned long long)(a < b ? b : a);
    PyObject *high = PyLong_FromUnsignedLongLong(lo);
    PyObject *shift = high ? PyLong_FromLong(64) : NULL;
    PyObject *shifted = shift ? PyNumber_Lshift(high, shift) : NULL;
    PyObject *low = shifted ? PyLong_FromUnsignedLongLong(hi) : NULL;
    PyObject *key = low ? PyNumber_Or(shifted, low) : NULL;
    Py_XDECREF(high);
    Py_XDECREF(shift);
    Py_XDECREF(shifted);
    Py_XDECREF(low);
    return key;
}

/* the distance, or limit + 1 where it is more (limit >= 0); -1 out of memory */
static int64_t
sequence_measure(const SequenceView *a, const SequenceView *b, long long limit)
{
    int64_t d = -2;
    int64_t *row = NULL;
    Py_BEGIN_ALLOW_THREADS
    if (limit >= 0) {
        d = sequence_band32(a->n, a->codes, a->marks, b->n, b->codes, b->marks, (int64_t)limit);
    }
    if (d == -2) {
        row = malloc((size_t)(b->n + 1) * sizeof(int64_t));
        d = row != NULL ? sequence_dp(a->n, a->codes, a->marks, b->n, b->codes, b->marks, row,
                                      (int64_t)limit)
                        : -1;
    }
    free(row);
    Py_END_ALLOW_THREADS
    return d;
}

static PyObject *
ted_sequence_similarities(PyObject *self, PyObject *args)
{
    PyObject *mine_obj, *others_obj, *known;
    double at_least;
    if (!PyArg_ParseTuple(args, "OOdO!:sequence_similarities", &mine_obj, &others_obj,
                          &at_least, &PyDict_Type, &known)) {
        return NULL;
    }
    PyObject *others = PySequence_Fast(others_obj, "sequence_similarities: others must be a sequence");
    if (others == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(others);
    PyObject *out = NULL;
    SequenceView mine, other = {NULL, NULL, 0, 0, 0};
    int rc = sequence_view(mine_obj, &mine);
    if (rc <= 0) {
        goto leave;
    }
    out = PyList_New(n);
    if (out == NULL) {
        goto leave;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(others, k);
        rc = sequence_view(item, &other);
        if (rc <= 0) {
            goto leave;
        }
        long long total = mine.weight + other.weight;
        double value = 1.0;
        if (total != 0) {
            long long limit = at_least > 0 ? distance_limit_of(at_least, total) : -1;
            PyObject *key = pair_key(mine.serial, other.serial);
            PyObject *seen = key ? PyDict_GetItemWithError(known, key) : NULL; /* borrowed */
            long long found = -1;
            int answered = 0;
            if (seen != NULL) {
                int overflow = 0;
                long long was = PyLong_AsLongLongAndOverflow(seen, &overflow);
                if (was == -1 && PyErr_Occurred()) {
                    Py_DECREF(key);
                    rc = -1;
                    goto leave;
                }
                if (!overflow && was >= 0) { /* the distance itself */
                    found = limit < 0 || was <= limit ? was : limit + 1;
                    answered = 1;
                } else if (!overflow && 0 <= limit && limit < -was) {
                    found = limit + 1; /* more than the limit, as the kernel would say */
                    answered = 1;
                }
            } else if (key == NULL || PyErr_Occurred()) {
                Py_XDECREF(key);
                rc = -1;
                goto leave;
            }
            if (!answered) {
                int64_t d = sequence_measure(&mine, &other, limit);
                if (d < 0) {
                    Py_DECREF(key);
                    PyErr_NoMemory();
                    rc = -1;
                    goto leave;
                }
                found = (long long)d;
                PyObject *remembered =
                    PyLong_FromLongLong(limit < 0 || found <= limit ? found : -found);
                if (remembered == NULL || PyDict_SetItem(known, key, remembered) < 0) {
                    Py_XDECREF(remembered);
                    Py_DECREF(key);
                    rc = -1;
                    goto leave;
                }
                Py_DECREF(remembered);
            }
            Py_DECREF(key);
            value = cmp_of(found, total);
        }
        sequence_view_free(&other);
        PyObject *f = PyFloat_FromDouble(value);
        if (f == NULL) {
            rc = -1;
            goto leave;
        }
        PyList_SET_ITEM(out, k, f);
    }
    sequence_view_free(&mine);
    Py_DECREF(others);
    return out;
leave:
    sequence_view_free(&mine);
    sequence_view_free(&other);
    Py_XDECREF(out);
    Py_DECREF(others);
    if (rc == 0 && !PyErr_Occurred()) {
        Py_RETURN_NONE; /* numbers past 64 bits: Python answers */
    }
    return NULL;
}

/* ------------------------------------------------------------------ small terms' bounds
 *
 * small_bounds(mine, blocks, at_least, limit): visdup.index.small.SmallTerms.query's ranking
 * of the rows it reads. A row is CODES summed marks by label code, CODES counts, then the
 * weight and the count (int64, as the index keeps them); ``blocks`` are the buckets' rows
 * in reading order (C-contiguous int64 buffers). Returns (block, row, bound) of the rows whose
 * histogram bound reaches at_least, highest bound first, then in reading order, at most
 * ``limit`` (-1: all): the same doubles numpy's pass gives.
 */
#define SMALL_CODES 8
#define SMALL_ROW (2 * SMALL_CODES + 2)

typedef struct {
    double bound;
    Py_ssize_t order, block, row;
} SmallHit;

static int
small_hit_order(const void *a, const void *b)
{
    const SmallHit *x = a, *y = b;
    if (x->bound != y->bound) return x->bound > y->bound ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static long long
abs_ll(long long v)
{
    return v < 0 ? -v : v;
}

static PyObject *
ted_small_bounds(PyObject *self, PyObject *args)
{
    Py_buffer mine_view;
    PyObject *blocks_obj;
    double at_least;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "y*Odn:small_bounds", &mine_view, &blocks_obj, &at_least,
                          &limit)) {
        return NULL;
    }
    PyObject *blocks = NULL, *result = NULL;
    SmallHit *hits = NULL;
    Py_ssize_t size = 0, cap = 0, order = 0;
    if (mine_view.len != SMALL_ROW * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "small_bounds: a row is 18 int64");
        goto done;
    }
    const int64_t *mine = mine_view.buf;
    blocks = PySequence_Fast(blocks_obj, "small_bounds: blocks must be a sequence");
    if (blocks == NULL) goto done;
    Py_ssize_t nblocks = PySequence_Fast_GET_SIZE(blocks);
    for (Py_ssize_t b = 0; b < nblocks; b++) {
        Py_buffer view;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(blocks, b), &view, PyBUF_C_CONTIGUOUS) < 0) {
            goto done;
        }
        if (view.len % (SMALL_ROW * (Py_ssize_t)sizeof(int64_t)) != 0) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "small_bounds: rows of 18 int64");
            goto done;
        }
        const int64_t *rows = view.buf;
        Py_ssize_t n = view.len / (SMALL_ROW * (Py_ssize_t)sizeof(int64_t));
        for (Py_ssize_t r = 0; r < n; r++, order++) {
            const int64_t *row = rows + r * SMALL_ROW;
            long long spread_w = 0, spread_c = 0;
            for (int c = 0; c < SMALL_CODES; c++) {
                spread_w += abs_ll(row[c] - mine[c]);
                spread_c += abs_ll(row[SMALL_CODES + c] - mine[SMALL_CODES + c]);
            }
            long long weight = row[2 * SMALL_CODES], count = row[2 * SMALL_CODES + 1];
            long long bw = (spread_w + abs_ll(weight - mine[2 * SMALL_CODES])) / 2;
            long long bc = (spread_c + abs_ll(count - mine[2 * SMALL_CODES + 1])) / 2;
            long long bound = bw > bc ? bw : bc;
            long long total = weight + mine[2 * SMALL_CODES];
            double sim = total == 0 ? 1.0 : 1.0 - (double)bound / (double)total;
            if (!(sim >= at_least)) continue;
            if (size == cap) {
                Py_ssize_t grown_cap = cap ? 2 * cap : 64;
                SmallHit *grown = PyMem_Realloc(hits, (size_t)grown_cap * sizeof(SmallHit));
                if (grown == NULL) {
                    PyBuffer_Release(&view);
                    PyErr_NoMemory();
                    goto done;
                }
                hits = grown;
                cap = grown_cap;
            }
            hits[size].bound = sim;
            hits[size].order = order;
            hits[size].block = b;
            hits[size].row = r;
            size++;
        }
        PyBuffer_Release(&view);
    }
    if (size > 1) qsort(hits, (size_t)size, sizeof(SmallHit), small_hit_order);
    if (limit >= 0 && size > limit) size = limit;
    result = PyList_New(size);
    if (result == NULL) goto done;
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *item = Py_BuildValue("(nnd)", hits[i].block, hits[i].row, hits[i].bound);
        if (item == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, item);
    }
done:
    PyMem_Free(hits);
    Py_XDECREF(blocks);
    PyBuffer_Release(&mine_view);
    return result;
}

static PyMethodDef ted_methods[] = {
    {"best_similarities", ted_best_similarities, METH_VARARGS,
     "best_similarities(mine, others) -> [mine.best_similarity(o) for o in others], or None "
     "when a count does not fit 64 bits"},
    {"distance", (PyCFunction)(void (*)(void))ted_distance, METH_VARARGS | METH_KEYWORDS,
     distance_doc},
    {"work", (PyCFunction)ted_work, METH_O, work_doc},
    {"small_bounds", ted_small_bounds, METH_VARARGS,
     "small_bounds(mine, blocks, at_least, limit) -> [(block, row, bound)] of the small terms' "
     "rows whose histogram bound reaches at_least, highest first, then in reading order"},
    {"sequence_similarities", ted_sequence_similarities, METH_VARARGS,
     "sequence_similarities(mine, others, at_least, known) -> [mine.sequence_similarity(o, "
     "at_least) for o in others], known pairs answered from known and new ones put there; "
     "None where a number is past 64 bits."},
    {"sequence_distance", (PyCFunction)(void (*)(void))ted_sequence_distance,
     METH_VARARGS | METH_KEYWORDS, sequence_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot ted_slots[] = {
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef ted_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "visdup._native._ted",
    .m_doc = "Compiled tree edit distance for marked ordered trees.",
    .m_size = 0,
    .m_methods = ted_methods,
    .m_slots = ted_slots,
};

PyMODINIT_FUNC
PyInit__ted(void)
{
    return PyModuleDef_Init(&ted_module);
}
