/* Node weights of main content (visdup.content.weights, visdup.content.main): the loops over
 * every element of a page, with the same arithmetic in the same order as the Python
 * reference, so that the chosen element and every weight are the same to the last bit.
 *
 * - weigh(parents, owners, values, chars, links, teasers, factors): the per-element sums,
 *   as bytes of doubles (net, good, teasers, linked) and of int64 (chars, links, count);
 * - weigh_blocks(parents, blocks, factors, ...rules): the same sums from the paragraphs
 *   themselves, each valued in C as block_value and is_teaser value it; weigh_rows the same
 *   of the compiled walk's rows and columns;
 * - ancestry(parents, factors): each element's smallest ancestor factor and its depth;
 * - choose(values, factors, path, depth, bonus, cap): the element of highest weight H;
 * - prune(index, parents, keys, headings, prune_tags, mass, factors, net, good, links,
 *   chars, listing, noise, link_floor, density, data_tags, data_density, data_roots, blocks):
 *   the elements main content drops, last first (no cell of a table or list kept whole, nor
 *   an inline element in one, goes for its links).
 *
 * Built with floating-point contraction off (setup.py): a fused multiply-add rounds once
 * where Python rounds twice.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A sequence (a list) of n numbers read into C: as indices into `ints`, or as floats into
 * `doubles` (the other one NULL); -1 on error. */
static int
read_numbers(PyObject *seq_obj, Py_ssize_t n, Py_ssize_t *ints, double *doubles, const char *name)
{
    PyObject *seq = PySequence_Fast(seq_obj, name);
    if (seq == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items", name, n);
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        int failed;
        if (ints != NULL) {
            ints[i] = PyLong_AsSsize_t(items[i]);
            failed = ints[i] == -1 && PyErr_Occurred();
        } else {
            doubles[i] = PyFloat_AsDouble(items[i]);
            failed = doubles[i] == -1.0 && PyErr_Occurred();
        }
        if (failed) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* A walk's parents (-1, then each element's parent before it) read into C; -1 on error,
 * a ValueError when they are not a preorder (a parent after its child). */
static int
read_parents(PyObject *seq_obj, Py_ssize_t n, Py_ssize_t *parents)
{
    if (read_numbers(seq_obj, n, parents, NULL, "parents") < 0) return -1;
    for (Py_ssize_t i = 1; i < n; i++) {
        if (parents[i] < 0 || parents[i] >= i) {
            PyErr_SetString(PyExc_ValueError, "parents: not a preorder");
            return -1;
        }
    }
    return 0;
}

/* A buffer of n doubles ('d') or n int64 ('q'), as array.array gives them. */
static int
get_array(PyObject *obj, Py_buffer *view, char code, Py_ssize_t n, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    Py_ssize_t item = code == 'd' ? (Py_ssize_t)sizeof(double) : (Py_ssize_t)sizeof(int64_t);
    if (view->format == NULL || view->format[0] != code || view->format[1] != '\0' ||
        view->itemsize != item || view->len != n * item) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items of type '%c'", name, n, code);
        return -1;
    }
    return 0;
}

/* Buffers of n doubles ('d') or n int64 ('q'), as array.array gives them: all of `count`
 * taken, or none (-1 on error). */
static int
get_arrays(PyObject **objs, Py_buffer *views, const char *codes, const char **names, int count,
           Py_ssize_t n)
{
    for (int k = 0; k < count; k++) {
        if (get_array(objs[k], &views[k], codes[k], n, names[k]) < 0) {
            while (k--) PyBuffer_Release(&views[k]);
            return -1;
        }
    }
    return 0;
}

static void
release_arrays(Py_buffer *views, int count)
{
    for (int k = 0; k < count; k++) PyBuffer_Release(&views[k]);
}

/* The per-element sums of weigh over n elements and nb paragraphs, into the seven result
 * buffers (made here); -1 with an exception set on error. */
typedef struct {
    PyObject *net, *good, *teasers, *linked, *chars, *links, *count;
} Sums;

static void
sums_clear(Sums *r)
{
    Py_CLEAR(r->net);
    Py_CLEAR(r->good);
    Py_CLEAR(r->teasers);
    Py_CLEAR(r->linked);
    Py_CLEAR(r->chars);
    Py_CLEAR(r->links);
    Py_CLEAR(r->count);
}

static int
weigh_sums(Py_ssize_t n, const Py_ssize_t *parents, const double *factors, Py_ssize_t nb,
           const Py_ssize_t *owners, const double *values, const Py_ssize_t *bchars,
           const Py_ssize_t *blinks, const unsigned char *is_teaser, Sums *r)
{
    r->net = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    r->good = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    r->teasers = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    r->linked = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    r->chars = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    r->links = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    r->count = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (!r->net || !r->good || !r->teasers || !r->linked || !r->chars || !r->links || !r->count) {
        sums_clear(r);
        return -1;
    }
    double *net = (double *)PyBytes_AS_STRING(r->net), *good = (double *)PyBytes_AS_STRING(r->good);
    double *teasers = (double *)PyBytes_AS_STRING(r->teasers);
    double *linked = (double *)PyBytes_AS_STRING(r->linked);
    int64_t *chars = (int64_t *)PyBytes_AS_STRING(r->chars);
    int64_t *links = (int64_t *)PyBytes_AS_STRING(r->links);
    int64_t *count = (int64_t *)PyBytes_AS_STRING(r->count);
    for (Py_ssize_t i = 0; i < n; i++) {
        net[i] = good[i] = teasers[i] = linked[i] = 0.0;
        chars[i] = links[i] = count[i] = 0;
    }
    for (Py_ssize_t b = 0; b < nb; b++) { /* each paragraph counts for its owner */
        Py_ssize_t o = owners[b];
        if (o < 0 || o >= n) {
            PyErr_SetString(PyExc_ValueError, "owners: no such element");
            sums_clear(r);
            return -1;
        }
        double value = values[b];
        net[o] += value;
        chars[o] += bchars[b];
        links[o] += blinks[b];
        linked[o] += (double)blinks[b];
        if (value > 0) good[o] += (double)(bchars[b] - blinks[b]);
        if (is_teaser[b]) {
            teasers[o] += (double)bchars[b];
            count[o] += 1;
        }
    }
    for (Py_ssize_t i = n - 1; i > 0; i--) { /* then up: furniture passes up its share */
        int64_t c = chars[i];
        if (!c) continue;
        Py_ssize_t p = parents[i];
        double s = net[i], g = good[i], t = teasers[i];
        double m = 1.0;
        if (s > 0 || g != 0.0 || t != 0.0 || linked[i] != 0.0) m = factors[i] < 1.0 ? factors[i] : 1.0;
        net[p] += s > 0 ? s * m : s;
        good[p] += g * m;
        teasers[p] += t * m;
        count[p] += count[i];
        linked[p] += linked[i] * m;
        chars[p] += c;
        links[p] += links[i];
    }
    return 0;
}

static PyObject *
sums_tuple(Sums *r)
{
    PyObject *result = PyTuple_Pack(7, r->net, r->good, r->chars, r->links, r->teasers, r->count,
                                    r->linked);
    sums_clear(r);
    return result;
}

/* The columns weigh_sums reads: the tree's parent links (n nodes), and per paragraph (nb) its
 * owner, characters, linked characters, value and teaser flag. */
typedef struct {
    Py_ssize_t *parents, *owners, *bchars, *blinks;
    double *values;
    unsigned char *teaser;
} Columns;

/* Room for the columns; -1 with MemoryError set. */
static int
columns_alloc(Columns *c, Py_ssize_t n, Py_ssize_t nb)
{
    c->parents = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    c->owners = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(nb + 1));
    c->bchars = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(nb + 1));
    c->blinks = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(nb + 1));
    c->values = (double *)malloc(sizeof(double) * (size_t)(nb + 1));
    c->teaser = (unsigned char *)malloc((size_t)(nb + 1));
    if (!c->parents || !c->owners || !c->bchars || !c->blinks || !c->values || !c->teaser) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void
columns_free(Columns *c)
{
    free(c->parents);
    free(c->owners);
    free(c->bchars);
    free(c->blinks);
    free(c->values);
    free(c->teaser);
}

static PyObject *
py_weigh(PyObject *self, PyObject *args)
{
    PyObject *parents_obj, *owners_obj, *values_obj, *chars_obj, *links_obj, *factors_obj;
    Py_buffer teaser;
    if (!PyArg_ParseTuple(args, "OOOOOy*O", &parents_obj, &owners_obj, &values_obj, &chars_obj,
                          &links_obj, &teaser, &factors_obj))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = PyObject_Length(parents_obj), nb = teaser.len;
    Columns c = {NULL};
    double *factors = NULL;
    Sums sums = {NULL};
    if (n < 0) goto done;
    if (columns_alloc(&c, n, nb) < 0) goto done;
    factors = (double *)malloc(sizeof(double) * (size_t)(n + 1));
    if (!factors) {
        PyErr_NoMemory();
        goto done;
    }
    if (read_parents(parents_obj, n, c.parents) < 0 ||
        read_numbers(owners_obj, nb, c.owners, NULL, "owners") < 0 ||
        read_numbers(chars_obj, nb, c.bchars, NULL, "chars") < 0 ||
        read_numbers(links_obj, nb, c.blinks, NULL, "links") < 0 ||
        read_numbers(values_obj, nb, NULL, c.values, "values") < 0 ||
        read_numbers(factors_obj, n, NULL, factors, "factors") < 0)
        goto done;
    if (weigh_sums(n, c.parents, factors, nb, c.owners, c.values, c.bchars, c.blinks,
                   (const unsigned char *)teaser.buf, &sums) < 0)
        goto done;
    result = sums_tuple(&sums);
done:
    PyBuffer_Release(&teaser);
    columns_free(&c);
    free(factors);
    return result;
}

/* ------------------------------------------------------------------ paragraph values
 *
 * weigh_blocks reads the paragraphs themselves (visdup.content.blocks.Block) and values
 * each as weights.block_value and weights.is_teaser do, with their constants passed in.
 */

typedef struct {
    Py_ssize_t min_prose, long_prose, sentence_prose;
    double max_link_share, link_cost, plain_cost, link_cost_not_prose, heading_share,
        heading_cost;
    PyObject *endings; /* a tuple of str: a teaser's endings */
    Py_UCS4 marks[32]; /* _SENTENCE_END's characters */
    int nmarks;
} Rules;

static int
is_mark(const Rules *r, Py_UCS4 c)
{
    for (int k = 0; k < r->nmarks; k++)
        if (r->marks[k] == c) return 1;
    return 0;
}

/* Whether any character of text[start:] is a sentence mark. */
static int
has_mark(const Rules *r, PyObject *text, Py_ssize_t start)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t i = start < 0 ? 0 : start; i < n; i++)
        if (is_mark(r, PyUnicode_READ(kind, data, i))) return 1;
    return 0;
}

/* text.endswith(endings): 1, 0, or -1 on error. */
static int
ends_as_teaser(const Rules *r, PyObject *text)
{
    Py_ssize_t k, n = PyTuple_GET_SIZE(r->endings);
    for (k = 0; k < n; k++) {
        Py_ssize_t hit = PyUnicode_Tailmatch(text, PyTuple_GET_ITEM(r->endings, k), 0,
                                             PY_SSIZE_T_MAX, 1);
        if (hit != 0) return hit < 0 ? -1 : 1;
    }
    return 0;
}

/* weights.is_prose of a paragraph (not a heading): 1, 0, or -1 on error. */
static int
is_prose(const Rules *r, Py_ssize_t chars, Py_ssize_t links, PyObject *text)
{
    if (chars < r->min_prose) return 0;
    if ((double)links > r->max_link_share * (double)chars) return 0;
    int teaser = ends_as_teaser(r, text);
    if (teaser != 0) return teaser < 0 ? -1 : 0;
    if (chars >= r->long_prose) return 1;
    if (has_mark(r, text, PyUnicode_GET_LENGTH(text) - 2)) return 1;
    if (chars < r->sentence_prose) return 0;
    if (PyUnicode_FindChar(text, ' ', 0, PyUnicode_GET_LENGTH(text), 1) < 0) return 0;
    return has_mark(r, text, 0);
}

/* A Block's int attribute; -1 with an exception on error. */
static Py_ssize_t
int_attr(PyObject *block, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(block, name);
    if (v == NULL) return -1;
    Py_ssize_t x = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return x;
}

static int read_marks(Rules *r, PyObject *marks);
static int value_of(const Rules *r, int heading, Py_ssize_t chars, Py_ssize_t links,
                    PyObject *text, double *value, unsigned char *teaser);

static PyObject *
py_weigh_blocks(PyObject *self, PyObject *args)
{
    PyObject *parents_obj, *blocks, *factors_obj, *marks;
    Rules r;
    if (!PyArg_ParseTuple(args, "OO!OnnnddddddO!U", &parents_obj, &PyList_Type, &blocks,
                          &factors_obj, &r.min_prose, &r.long_prose, &r.sentence_prose,
                          &r.max_link_share, &r.link_cost, &r.plain_cost, &r.link_cost_not_prose,
                          &r.heading_share, &r.heading_cost, &PyTuple_Type, &r.endings, &marks))
        return NULL;
    if (read_marks(&r, marks) < 0) return NULL;
    static PyObject *s_owner, *s_kind, *s_chars, *s_links, *s_text, *s_cached, *s_heading;
    if (s_owner == NULL) {
        s_owner = PyUnicode_InternFromString("owner");
        s_kind = PyUnicode_InternFromString("kind");
        s_chars = PyUnicode_InternFromString("chars");
        s_links = PyUnicode_InternFromString("link_chars");
        s_text = PyUnicode_InternFromString("text");
        s_cached = PyUnicode_InternFromString("_text");
        s_heading = PyUnicode_InternFromString("heading");
        if (!s_owner || !s_kind || !s_chars || !s_links || !s_text || !s_cached || !s_heading)
            return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = PyObject_Length(parents_obj), nb = PyList_GET_SIZE(blocks);
    Columns c = {NULL};
    double *factors = NULL;
    Py_buffer fv;
    int have_view = 0;
    Sums sums = {NULL};
    if (n < 0) return NULL;
    if (columns_alloc(&c, n, nb) < 0) goto done;
    if (read_parents(parents_obj, n, c.parents) < 0) goto done;
    if (PyObject_CheckBuffer(factors_obj)) { /* an array of doubles, as the walk made it */
        if (get_array(factors_obj, &fv, 'd', n, "factors") < 0) goto done;
        have_view = 1;
        factors = (double *)fv.buf;
    } else {
        factors = (double *)malloc(sizeof(double) * (size_t)(n + 1));
        if (factors == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        if (read_numbers(factors_obj, n, NULL, factors, "factors") < 0) goto done;
    }
    for (Py_ssize_t b = 0; b < nb; b++) {
        PyObject *block = PyList_GET_ITEM(blocks, b);
        Py_ssize_t owner = int_attr(block, s_owner);
        if (owner == -1 && PyErr_Occurred()) goto done;
        Py_ssize_t chars = int_attr(block, s_chars);
        if (chars == -1 && PyErr_Occurred()) goto done;
        Py_ssize_t links = int_attr(block, s_links);
        if (links == -1 && PyErr_Occurred()) goto done;
        PyObject *kind = PyObject_GetAttr(block, s_kind);
        if (kind == NULL) goto done;
        int heading = kind == s_heading || (PyUnicode_Check(kind) &&
                                            PyUnicode_Compare(kind, s_heading) == 0);
        Py_DECREF(kind);
        c.owners[b] = owner;
        c.bchars[b] = chars;
        c.blinks[b] = links;
        PyObject *text = NULL;
        if (!heading) {
            text = PyObject_GetAttr(block, s_cached); /* the text the walk made */
            if (text == Py_None) {
                Py_DECREF(text);
                text = PyObject_GetAttr(block, s_text);
            }
            if (text == NULL) goto done;
        }
        int rc = value_of(&r, heading, chars, links, text, &c.values[b], &c.teaser[b]);
        Py_XDECREF(text);
        if (rc < 0) goto done;
    }
    if (weigh_sums(n, c.parents, factors, nb, c.owners, c.values, c.bchars, c.blinks, c.teaser,
                   &sums) < 0)
        goto done;
    result = sums_tuple(&sums);
done:
    if (have_view)
        PyBuffer_Release(&fv);
    else
        free(factors);
    columns_free(&c);
    return result;
}

/* The sentence marks and endings of the rules, checked; -1 on error. */
static int
read_marks(Rules *r, PyObject *marks)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(r->endings); k++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(r->endings, k))) {
            PyErr_SetString(PyExc_TypeError, "weigh: endings must be str");
            return -1;
        }
    }
    if (PyUnicode_GET_LENGTH(marks) > 32) {
        PyErr_SetString(PyExc_ValueError, "weigh: at most 32 sentence marks");
        return -1;
    }
    r->nmarks = (int)PyUnicode_GET_LENGTH(marks);
    for (int k = 0; k < r->nmarks; k++) r->marks[k] = PyUnicode_READ_CHAR(marks, k);
    return 0;
}

/* A paragraph's value and whether it is a teaser, as block_value and is_teaser give them;
 * -1 on error. */
static int
value_of(const Rules *r, int heading, Py_ssize_t chars, Py_ssize_t links, PyObject *text,
         double *value, unsigned char *teaser)
{
    if (heading) {
        int linked = (double)links > r->heading_share * (double)chars;
        *value = linked ? -r->heading_cost * (double)chars : 0.0;
        *teaser = (unsigned char)linked;
        return 0;
    }
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "weigh: a paragraph's text must be str");
        return -1;
    }
    int prose = is_prose(r, chars, links, text);
    int ends = prose < 0 ? -1 : chars >= r->min_prose ? ends_as_teaser(r, text) : 0;
    if (prose < 0 || ends < 0) return -1;
    *teaser = (unsigned char)ends;
    if (prose)
        *value = (double)chars - r->link_cost * (double)links;
    else
        *value = -r->plain_cost * (double)(chars - links) - r->link_cost_not_prose * (double)links;
    return 0;
}

/* weigh_rows: weigh_blocks of the compiled walk's rows (kind, level, text) and its int64
 * columns (owner, link characters, characters) per paragraph. */
static PyObject *
py_weigh_rows(PyObject *self, PyObject *args)
{
    PyObject *parents_obj, *rows, *factors_obj, *marks;
    Py_buffer cv;
    Rules r;
    if (!PyArg_ParseTuple(args, "OO!y*OnnnddddddO!U", &parents_obj, &PyList_Type, &rows, &cv,
                          &factors_obj, &r.min_prose, &r.long_prose, &r.sentence_prose,
                          &r.max_link_share, &r.link_cost, &r.plain_cost, &r.link_cost_not_prose,
                          &r.heading_share, &r.heading_cost, &PyTuple_Type, &r.endings, &marks))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = PyObject_Length(parents_obj), nb = PyList_GET_SIZE(rows);
    Columns c = {NULL};
    Py_buffer fv;
    int have_view = 0;
    Sums sums = {NULL};
    const int64_t *columns = (const int64_t *)cv.buf;
    if (n < 0 || read_marks(&r, marks) < 0) goto done;
    if (cv.len != nb * 3 * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "weigh_rows: three int64 columns per row expected");
        goto done;
    }
    if (get_array(factors_obj, &fv, 'd', n, "factors") < 0) goto done;
    have_view = 1;
    if (columns_alloc(&c, n, nb) < 0 || read_parents(parents_obj, n, c.parents) < 0) goto done;
    for (Py_ssize_t b = 0; b < nb; b++) {
        PyObject *row = PyList_GET_ITEM(rows, b);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 3) {
            PyErr_SetString(PyExc_TypeError, "weigh_rows: (kind, level, text) rows expected");
            goto done;
        }
        PyObject *kind = PyTuple_GET_ITEM(row, 0);
        int heading = PyUnicode_Check(kind) && PyUnicode_CompareWithASCIIString(kind, "heading") == 0;
        c.owners[b] = (Py_ssize_t)columns[3 * b];
        c.blinks[b] = (Py_ssize_t)columns[3 * b + 1];
        c.bchars[b] = (Py_ssize_t)columns[3 * b + 2];
        if (value_of(&r, heading, c.bchars[b], c.blinks[b], PyTuple_GET_ITEM(row, 2),
                     &c.values[b], &c.teaser[b]) < 0)
            goto done;
    }
    if (weigh_sums(n, c.parents, (const double *)fv.buf, nb, c.owners, c.values, c.bchars,
                   c.blinks, c.teaser, &sums) < 0)
        goto done;
    result = sums_tuple(&sums);
done:
    if (have_view) PyBuffer_Release(&fv);
    PyBuffer_Release(&cv);
    columns_free(&c);
    return result;
}

static PyObject *
py_ancestry(PyObject *self, PyObject *args)
{
    PyObject *parents_obj, *factors_obj;
    if (!PyArg_ParseTuple(args, "OO", &parents_obj, &factors_obj)) return NULL;
    Py_ssize_t n = PyObject_Length(parents_obj);
    if (n < 0) return NULL;
    Py_buffer fv;
    if (get_array(factors_obj, &fv, 'd', n, "factors") < 0) return NULL;
    const double *factors = (const double *)fv.buf;
    Py_ssize_t *parents = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    PyObject *path_b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    PyObject *depth_b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *result = NULL;
    if (parents == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (path_b == NULL || depth_b == NULL || read_parents(parents_obj, n, parents) < 0) goto done;
    double *path = (double *)PyBytes_AS_STRING(path_b);
    int64_t *depth = (int64_t *)PyBytes_AS_STRING(depth_b);
    if (n > 0) {
        path[0] = 1.0;
        depth[0] = 0;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        Py_ssize_t p = parents[i];
        path[i] = 1.0;
        if (p) { /* the walked root's own factor discounts nothing below it */
            double m = factors[p], q = path[p];
            path[i] = q < m ? q : m;
        }
        depth[i] = depth[p] + 1;
    }
    result = Py_BuildValue("(OO)", path_b, depth_b);
done:
    PyBuffer_Release(&fv);
    free(parents);
    Py_XDECREF(path_b);
    Py_XDECREF(depth_b);
    return result;
}

static PyObject *
py_choose(PyObject *self, PyObject *args)
{
    PyObject *values_obj, *factors_obj, *path_obj, *depth_obj;
    double bonus;
    long long cap;
    if (!PyArg_ParseTuple(args, "OOOOdL", &values_obj, &factors_obj, &path_obj, &depth_obj,
                          &bonus, &cap))
        return NULL;
    Py_ssize_t n = PyObject_Length(path_obj);
    if (n < 0) return NULL;
    Py_buffer views[4];
    PyObject *objs[4] = {values_obj, factors_obj, path_obj, depth_obj};
    const char *names[4] = {"values", "factors", "path", "depth"};
    if (get_arrays(objs, views, "dddq", names, 4, n) < 0) return NULL;
    const double *values = (const double *)views[0].buf, *factors = (const double *)views[1].buf;
    const double *path = (const double *)views[2].buf;
    const int64_t *depth = (const int64_t *)views[3].buf;
    Py_ssize_t best = 0;
    double best_score = -Py_HUGE_VAL;
    for (Py_ssize_t i = 0; i < n; i++) {
        double s = values[i];
        if (s <= 0) continue;
        int64_t d = depth[i] < cap ? depth[i] : cap;
        double lift = 1 + bonus * (double)d;
        double weighted = s * factors[i] * path[i] * lift;
        if (weighted >= best_score) { /* deeper elements win ties */
            best = i;
            best_score = weighted;
        }
    }
    release_arrays(views, 4);
    return PyLong_FromSsize_t(best);
}

static int
by_descending(const void *a, const void *b)
{
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return x > y ? -1 : (x < y);
}

/* Whether the tag (item 0 of the element's key) is in the set; -1 on error. */
static int
tag_in(PyObject *keys, Py_ssize_t i, PyObject *set)
{
    PyObject *key = PyList_GET_ITEM(keys, i);
    if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) < 1) {
        PyErr_SetString(PyExc_ValueError, "keys: (tag, ...) tuples expected");
        return -1;
    }
    return PySet_Contains(set, PyTuple_GET_ITEM(key, 0));
}

static PyObject *
py_prune(PyObject *self, PyObject *args)
{
    Py_ssize_t index;
    PyObject *parents_obj, *keys, *headings, *prune_tags, *data_tags, *data_roots, *blocks;
    PyObject *mass_obj, *factors_obj, *net_obj, *good_obj, *links_obj, *chars_obj;
    int listing;
    double noise, link_floor, density, data_density;
    if (!PyArg_ParseTuple(args, "nOO!O!O!OOOOOOpdddO!dO!O!", &index, &parents_obj, &PyList_Type,
                          &keys, &PyFrozenSet_Type, &headings, &PyFrozenSet_Type, &prune_tags,
                          &mass_obj, &factors_obj, &net_obj, &good_obj, &links_obj, &chars_obj,
                          &listing, &noise, &link_floor, &density, &PyFrozenSet_Type,
                          &data_tags, &data_density, &PyFrozenSet_Type, &data_roots,
                          &PyFrozenSet_Type, &blocks))
        return NULL;
    Py_ssize_t n = PyObject_Length(parents_obj);
    if (n < 0) return NULL;
    if (PyList_GET_SIZE(keys) != n || index < 0 || index >= n) {
        PyErr_SetString(PyExc_ValueError, "prune: keys or index do not fit the parents");
        return NULL;
    }
    Py_buffer views[6];
    PyObject *objs[6] = {mass_obj, factors_obj, net_obj, good_obj, links_obj, chars_obj};
    const char *names[6] = {"mass", "factors", "net", "good", "links", "chars"};
    PyObject *result = NULL;
    Py_ssize_t *parents = NULL, *sizes = NULL, *stack = NULL, *doomed = NULL;
    char *kept_data = NULL; /* per stack entry: inside a table or list kept whole */
    if (get_arrays(objs, views, "ddddqq", names, 6, n) < 0) return NULL;
    const double *mass = (const double *)views[0].buf, *factors = (const double *)views[1].buf;
    const double *net = (const double *)views[2].buf, *good = (const double *)views[3].buf;
    const int64_t *links = (const int64_t *)views[4].buf, *chars = (const int64_t *)views[5].buf;
    parents = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    sizes = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    stack = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    doomed = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    kept_data = (char *)malloc((size_t)(n + 1));
    if (!parents || !sizes || !stack || !doomed || !kept_data) {
        PyErr_NoMemory();
        goto done;
    }
    if (read_parents(parents_obj, n, parents) < 0) goto done;
    for (Py_ssize_t i = 0; i < n; i++) sizes[i] = 1;
    for (Py_ssize_t i = n - 1; i > 0; i--) sizes[parents[i]] += sizes[i];
    Py_ssize_t sp = 0, nd = 0;
    kept_data[sp] = 0;
    stack[sp++] = index;
    while (sp) { /* top-down: a doomed branch is not looked into */
        Py_ssize_t idx = stack[--sp];
        char inside_data = kept_data[sp];
        Py_ssize_t k = idx + 1, end = idx + sizes[idx];
        while (k < end) {
            Py_ssize_t child = k;
            k += sizes[child];
            int heading = tag_in(keys, child, headings);
            if (heading < 0) goto done;
            if (heading) continue;
            int doom = tag_in(keys, child, prune_tags);
            if (doom < 0) goto done;
            int data = tag_in(keys, child, data_tags);
            if (data < 0) goto done;
            int cell = 0; /* a kept table's or list's cell, or inline in one */
            if (inside_data) {
                int block = data ? 0 : tag_in(keys, child, blocks);
                if (block < 0) goto done;
                cell = data || !block;
            }
            if (!doom) doom = mass[child] < noise && factors[child] < 1;
            if (!doom && !listing && !cell && net[child] < 0 && good[child] < link_floor) {
                double share = (double)links[child] / (double)(chars[child] > 1 ? chars[child] : 1);
                doom = share > (data ? data_density : density);
            }
            if (doom) {
                doomed[nd++] = child;
            } else {
                int root = cell ? 1 : tag_in(keys, child, data_roots);
                if (root < 0) goto done;
                kept_data[sp] = (char)root;
                stack[sp++] = child;
            }
        }
    }
    qsort(doomed, (size_t)nd, sizeof(Py_ssize_t), by_descending);
    result = PyList_New(nd);
    for (Py_ssize_t i = 0; result != NULL && i < nd; i++) {
        PyObject *v = PyLong_FromSsize_t(doomed[i]);
        if (v == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, v);
    }
done:
    release_arrays(views, 6);
    free(parents);
    free(sizes);
    free(stack);
    free(doomed);
    free(kept_data);
    return result;
}

/* below(factors, start, bound) -> the indices from start on whose factor is below bound, in
 * order: a page's few furniture-named elements among its thousands, without a Python
 * comparison per element. factors: an array of doubles. */
static PyObject *
py_below(PyObject *self, PyObject *args)
{
    PyObject *factors_obj;
    Py_ssize_t start;
    double bound;
    if (!PyArg_ParseTuple(args, "Ond", &factors_obj, &start, &bound)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(factors_obj, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (view.format == NULL || view.format[0] != 'd' || view.format[1] != '\0' ||
        view.itemsize != (Py_ssize_t)sizeof(double)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "below: expected an array of doubles");
        return NULL;
    }
    const double *f = (const double *)view.buf;
    Py_ssize_t n = view.len / (Py_ssize_t)sizeof(double);
    PyObject *out = PyList_New(0);
    for (Py_ssize_t k = start < 0 ? 0 : start; out != NULL && k < n; k++) {
        if (f[k] < bound) {
            PyObject *index = PyLong_FromSsize_t(k);
            if (index == NULL || PyList_Append(out, index) < 0) Py_CLEAR(out);
            Py_XDECREF(index);
        }
    }
    PyBuffer_Release(&view);
    return out;
}

/* ------------------------------------------------------------------ key factors
 *
 * key_factor(key, tables) is visdup.content.weights._factor_of(tag, _words(key), itemprop) of
 * an element's key (tag, class, id, role, itemprop), for keys whose attributes are ASCII: the
 * words of each attribute are its runs of letters and digits, lower-cased, a lower-case
 * letter followed by an upper-case one starting a new word (camelCase); None for a key with
 * another character (Python's lower() and its word pattern answer). `tables` is
 * (noise_tags, content_tags, noise_words, more_words, content_words, compound_words,
 * compound_min, noise_tag_factor, noise_word_factor, content_factor, article_body_factor).
 */
typedef struct {
    int noise, more, more_partner, content;
} WordMarks;

static int
in_set(PyObject *set, PyObject *word)
{
    return set != NULL && PyAnySet_Check(set) ? PySet_Contains(set, word) : 0;
}

/* Marks the word w (n bytes, lower case) holds; -1 on an error. */
static int
mark_word(const char *w, Py_ssize_t n, PyObject *tables, WordMarks *m)
{
    PyObject *word = PyUnicode_FromStringAndSize(w, n);
    if (word == NULL) return -1;
    int noise = in_set(PyTuple_GET_ITEM(tables, 2), word);
    int partner = noise < 0 ? -1 : in_set(PyTuple_GET_ITEM(tables, 3), word);
    int content = partner < 0 ? -1 : in_set(PyTuple_GET_ITEM(tables, 4), word);
    Py_DECREF(word);
    if (noise < 0 || partner < 0 || content < 0) return -1;
    m->noise |= noise;
    m->more_partner |= partner;
    m->content |= content;
    if (n == 4 && memcmp(w, "more", 4) == 0) m->more = 1;
    Py_ssize_t least = PyLong_AsSsize_t(PyTuple_GET_ITEM(tables, 6));
    if (least == -1 && PyErr_Occurred()) return -1;
    if (!m->noise && n >= least) { /* a furniture word glued to another, at either end */
        PyObject *compounds = PyTuple_GET_ITEM(tables, 5);
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(compounds) && !m->noise; k++) {
            Py_ssize_t len;
            const char *c = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(compounds, k), &len);
            if (c == NULL) return -1;
            if (len <= n && (memcmp(w, c, (size_t)len) == 0 || memcmp(w + n - len, c, (size_t)len) == 0))
                m->noise = 1;
        }
    }
    return 0;
}

/* Marks the words of one attribute; 1 when it holds a character that is no ASCII, -1 on an
 * error. */
static int
mark_words(PyObject *attr, PyObject *tables, WordMarks *m)
{
    if (!PyUnicode_IS_ASCII(attr)) return 1;
    const char *s = (const char *)PyUnicode_DATA(attr);
    Py_ssize_t n = PyUnicode_GET_LENGTH(attr);
    char buf[256];
    Py_ssize_t start = -1;
    for (Py_ssize_t i = 0; i <= n; i++) {
        char c = i < n ? s[i] : 0;
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        int camel = alnum && start >= 0 && c >= 'A' && c <= 'Z' && s[i - 1] >= 'a' && s[i - 1] <= 'z';
        if (start >= 0 && (!alnum || camel)) { /* a word ends before i */
            Py_ssize_t len = i - start;
            char *w = len <= (Py_ssize_t)sizeof(buf) ? buf : PyMem_Malloc((size_t)len);
            if (w == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            for (Py_ssize_t k = 0; k < len; k++) {
                char d = s[start + k];
                w[k] = (char)(d >= 'A' && d <= 'Z' ? d + 32 : d);
            }
            int rc = mark_word(w, len, tables, m);
            if (w != buf) PyMem_Free(w);
            if (rc < 0) return -1;
            start = -1;
        }
        if (alnum && start < 0) start = i;
    }
    return 0;
}

static PyObject *
py_key_factor(PyObject *self, PyObject *args)
{
    PyObject *key, *tables;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &key, &PyTuple_Type, &tables)) return NULL;
    if (PyTuple_GET_SIZE(key) != 5 || PyTuple_GET_SIZE(tables) != 11) {
        PyErr_SetString(PyExc_ValueError, "key_factor: a key of 5 and tables of 11");
        return NULL;
    }
    WordMarks m = {0, 0, 0, 0};
    for (Py_ssize_t k = 1; k < 5; k++) {
        PyObject *attr = PyTuple_GET_ITEM(key, k);
        if (attr == Py_None) continue;
        if (!PyUnicode_Check(attr)) Py_RETURN_NONE;
        if (PyUnicode_GET_LENGTH(attr) == 0) continue;
        int rc = mark_words(attr, tables, &m);
        if (rc < 0) return NULL;
        if (rc > 0) Py_RETURN_NONE;
    }
    PyObject *tag = PyTuple_GET_ITEM(key, 0), *itemprop = PyTuple_GET_ITEM(key, 4);
    double f[4];
    for (int k = 0; k < 4; k++) {
        f[k] = PyFloat_AsDouble(PyTuple_GET_ITEM(tables, 7 + k));
        if (f[k] == -1.0 && PyErr_Occurred()) return NULL;
    }
    int article = 0;
    if (itemprop != Py_None) {
        article = PyUnicode_Check(itemprop) && PyUnicode_CompareWithASCIIString(itemprop, "articleBody") == 0;
    }
    int noise_tag = in_set(PyTuple_GET_ITEM(tables, 0), tag);
    int content_tag = noise_tag < 0 ? -1 : in_set(PyTuple_GET_ITEM(tables, 1), tag);
    if (noise_tag < 0 || content_tag < 0) return NULL;
    double value = 1.0;
    if (noise_tag) value *= f[0];
    if (!article && (m.noise || (m.more && m.more_partner))) value *= f[1];
    if (m.content || content_tag) value *= f[2];
    if (article) value *= f[3];
    return PyFloat_FromDouble(value);
}

static PyMethodDef methods[] = {
    {"weigh", py_weigh, METH_VARARGS,
     "weigh(parents, owners, values, chars, links, teasers, factors) -> (net, good, chars, "
     "links, teasers, count, linked) as bytes of doubles and int64"},
    {"weigh_blocks", py_weigh_blocks, METH_VARARGS,
     "weigh_blocks(parents, blocks, factors, min_prose, long_prose, sentence_prose, "
     "max_link_share, link_cost, plain_cost, link_cost_not_prose, heading_share, heading_cost, "
     "endings, marks) -> weigh's sums, each paragraph valued as block_value and is_teaser do"},
    {"weigh_rows", py_weigh_rows, METH_VARARGS,
     "weigh_rows(parents, rows, columns, factors, min_prose, long_prose, sentence_prose, "
     "max_link_share, link_cost, plain_cost, link_cost_not_prose, heading_share, heading_cost, "
     "endings, marks) -> weigh_blocks of the walk's rows and int64 columns (owner, link "
     "chars, chars)"},
    {"key_factor", py_key_factor, METH_VARARGS,
     "key_factor(key, tables) -> _factor_of of an element key's words, or None for Python "
     "(an attribute that is no ASCII)"},
    {"below", py_below, METH_VARARGS,
     "below(factors, start, bound) -> the indices from start on whose factor is below bound"},
    {"ancestry", py_ancestry, METH_VARARGS,
     "ancestry(parents, factors) -> (smallest ancestor factor, depth) as bytes"},
    {"choose", py_choose, METH_VARARGS,
     "choose(values, factors, path, depth, bonus, cap) -> the element of highest weight"},
    {"prune", py_prune, METH_VARARGS,
     "prune(index, parents, keys, headings, prune_tags, mass, factors, net, good, links, "
     "chars, listing, noise, link_floor, density, data_tags, data_density, data_roots, blocks) -> "
     "elements to "
     "drop, last first"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_weights",
                                    "Main content's node weights, choice and pruning.", -1,
                                    methods};

PyMODINIT_FUNC
PyInit__weights(void)
{
    return PyModule_Create(&module);
}
