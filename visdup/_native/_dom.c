/*
 * The walks over a parsed page's tree, compiled: the DOM tree of the template step, the
 * page's links, main content's paragraphs, the invisible nodes, text lengths and the layout
 * signature's walk.
 *
 * dom_walk is visdup.stm.dom_tree's walk done over libxml2's nodes directly, so that no
 * Python proxy (and no lxml.html class lookup) is made per element. It reads the node
 * behind an lxml element through the leading fields of lxml's element object and of
 * libxml2's xmlNode/xmlAttr structs, declared in _lxml_tree.h (their order has not changed
 * in libxml2's history); no libxml2 function is called. A probe at import checks that layout
 * on a small tree: when it differs, dom_walk is not offered and Python does the walk.
 * Whatever the C walk cannot reproduce exactly (namespaced elements, attribute values
 * that are not plain text, undecodable text) makes it return None: Python walks instead.
 * The GIL is held throughout: the tree belongs to lxml objects.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_lxml_tree.h"
#include "_mix.h"

static PyTypeObject *element_type = NULL; /* lxml.etree._Element, set when the probe passed */

/* What a walk made of an element's name and raw attribute values (a label and a hint, a
 * weight key), kept for the page: a page repeats a few hundred such combinations over
 * thousands of elements, and each costs several new strings. Open addressing over
 * ATTR_SLOTS; a full table stops caching, never the walk. */
#define ATTR_SLOTS 2048
#define ATTR_VALUES 4
typedef struct {
    uint64_t hash;
    const unsigned char *name;  /* libxml2 keeps one copy of each name per document */
    char *values[ATTR_VALUES]; /* copies of the raw values, NULL for an absent attribute */
    PyObject *made[2];         /* what the walk made of them; made[0] NULL: a free slot */
} AttrEntry;

typedef struct {
    AttrEntry *slots; /* ATTR_SLOTS entries, or NULL: no cache */
    int count;
} AttrCache;

typedef struct {
    PyObject *labels, *texts, *hints, *parents;
    PyObject *skip, *text_label, *tags, *empty;
    Py_ssize_t max_nodes;
    int classes, with_text, truncated, fallback;
    AttrCache seen; /* labels and hints by tag, id and class */
    /* lower_tag's last names by pointer; the tags borrowed from `tags`, which holds them */
    const unsigned char *tag_names[64];
    PyObject *tag_objs[64];
    int ntags;
} Walk;

/* lxml's _textNodeOrSkip. */
static vd_node *
text_node_or_skip(vd_node *c)
{
    while (c != NULL) {
        if (c->type == N_TEXT || c->type == N_CDATA) return c;
        if (c->type != N_XINCLUDE_START && c->type != N_XINCLUDE_END) return NULL;
        c = c->next;
    }
    return NULL;
}

static int
ascii_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* The code point of the UTF-8 character at p in *cp, and its width in bytes; -1 for bytes
 * that are not UTF-8 (the terminating NUL stops a character cut short). */
static inline int
utf8_next(const unsigned char *p, Py_UCS4 *cp)
{
    unsigned char b = *p;
    int extra;
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    if ((b & 0xE0) == 0xC0) {
        *cp = b & 0x1F;
        extra = 1;
    } else if ((b & 0xF0) == 0xE0) {
        *cp = b & 0x0F;
        extra = 2;
    } else if ((b & 0xF8) == 0xF0) {
        *cp = b & 0x07;
        extra = 3;
    } else {
        return -1;
    }
    for (int k = 1; k <= extra; k++) {
        if ((p[k] & 0xC0) != 0x80) return -1;
        *cp = (*cp << 6) | (p[k] & 0x3F);
    }
    return extra + 1;
}

/* Appends the NUL-terminated UTF-8 text at p to out from *o with its whitespace runs squeezed
 * as str.split() sees them (Py_UNICODE_ISSPACE): a run read sets *gap, written as one space
 * before the next character, never first. Counts the characters written, spaces aside, in
 * *ink. out needs room for strlen(p) + 1 more bytes. -1 for bytes that are no UTF-8. */
static int
squeeze_text(const unsigned char *p, unsigned char *out, size_t *o, int *gap, Py_ssize_t *ink)
{
    size_t at = *o;
    int pending = *gap;
    Py_ssize_t kept = 0;
    while (*p) {
        unsigned char b = *p;
        if (b > ' ' && b < 0x7F) { /* most characters: printable ASCII */
            if (pending) out[at++] = ' ';
            pending = 0;
            out[at++] = b;
            p++;
            kept++;
            continue;
        }
        Py_UCS4 cp;
        int width = utf8_next(p, &cp);
        if (width < 0) return -1;
        if (Py_UNICODE_ISSPACE(cp)) {
            pending = at > 0;
        }
        else {
            if (pending) out[at++] = ' ';
            pending = 0;
            memcpy(out + at, p, (size_t)width);
            at += (size_t)width;
            kept++;
        }
        p += width;
    }
    *o = at;
    *gap = pending;
    *ink += kept;
    return 0;
}

/* Adds the normalised text of the text run starting at `first` (an element's .text when
 * first = children, a tail when first = next): its words a space apart, as
 * " ".join(text.split()) gives them, squeezed here in UTF-8 and decoded once (no list of
 * words made). 0 done, 1 stop (node cap or text that is no UTF-8), -1 error. */
static int
add_text(Walk *w, vd_node *first, Py_ssize_t up)
{
    vd_node *t = text_node_or_skip(first);
    if (t == NULL || !w->with_text) return 0;
    size_t total = 0;
    int ink = 0; /* a byte that is no ASCII whitespace: most runs between tags have none */
    for (vd_node *c = t; c != NULL; c = text_node_or_skip(c->next)) {
        const unsigned char *s = c->content;
        if (s == NULL) continue;
        for (; *s; s++, total++)
            if (!ascii_space(*s)) ink = 1;
    }
    if (!ink) return 0;
    unsigned char *buf = (unsigned char *)malloc(total + 1);
    if (buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    size_t o = 0;
    int gap = 0;
    Py_ssize_t chars = 0;
    for (vd_node *c = t; c != NULL; c = text_node_or_skip(c->next)) {
        if (c->content != NULL && squeeze_text(c->content, buf, &o, &gap, &chars) < 0) {
            free(buf);
            w->fallback = 1;
            return 1;
        }
    }
    if (o == 0) { /* Unicode whitespace only */
        free(buf);
        return 0;
    }
    if (PyList_GET_SIZE(w->labels) >= w->max_nodes) {
        free(buf);
        w->truncated = 1;
        return 1;
    }
    PyObject *norm = PyUnicode_DecodeUTF8((const char *)buf, (Py_ssize_t)o, NULL);
    free(buf);
    if (norm == NULL) { /* a sequence Python does not read as UTF-8 (a surrogate, overlong) */
        PyErr_Clear();
        w->fallback = 1;
        return 1;
    }
    PyObject *upo = PyLong_FromSsize_t(up);
    int rc = upo == NULL || PyList_Append(w->labels, w->text_label) < 0 ||
             PyList_Append(w->texts, norm) < 0 || PyList_Append(w->hints, w->empty) < 0 ||
             PyList_Append(w->parents, upo) < 0;
    Py_DECREF(norm);
    Py_XDECREF(upo);
    return rc ? -1 : 0;
}

static vd_attr *
find_attr(vd_node *el, const char *name)
{
    for (vd_attr *a = el->properties; a != NULL; a = a->next)
        if (a->ns == NULL && a->name != NULL && strcmp((const char *)a->name, name) == 0)
            return a;
    return NULL;
}

/* An attribute's value as lxml gives it; NULL with *fallback set or an error. */
static PyObject *
attr_text(vd_attr *a, int *fallback)
{
    vd_node *c = a->children;
    if (c == NULL) return PyUnicode_FromString("");
    if (c->type != N_TEXT || c->next != NULL || c->content == NULL) {
        *fallback = 1;
        return NULL;
    }
    PyObject *v = PyUnicode_DecodeUTF8((const char *)c->content,
                                       (Py_ssize_t)strlen((const char *)c->content), NULL);
    if (v == NULL) {
        PyErr_Clear();
        *fallback = 1;
    }
    return v;
}

/* The value of the element's attribute `name` (no namespace), as lxml's get() gives it:
 * a new reference, Py_None (new reference) when absent, NULL with *fallback set (a value
 * this walk cannot reproduce exactly: the caller hands the page to Python) or an error. */
static PyObject *
node_attr(vd_node *el, const char *name, int *fallback)
{
    vd_attr *a = find_attr(el, name);
    if (a == NULL) Py_RETURN_NONE;
    return attr_text(a, fallback);
}

static PyObject *
attr_value(Walk *w, vd_node *el, const char *name)
{
    return node_attr(el, name, &w->fallback);
}

/* An element's name lower-cased as Python's str.lower() does it, cached in `cache` by the
 * name's bytes; NULL with *fallback set (a name that is not UTF-8) or an error. */
static PyObject *
lowered_tag(PyObject *cache, vd_node *el, int *fallback)
{
    PyObject *key = PyBytes_FromString((const char *)el->name);
    if (key == NULL) return NULL;
    PyObject *tag = PyDict_GetItemWithError(cache, key);
    if (tag != NULL) {
        Py_DECREF(key);
        Py_INCREF(tag);
        return tag;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *raw = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), NULL);
    if (raw == NULL) {
        PyErr_Clear();
        Py_DECREF(key);
        *fallback = 1;
        return NULL;
    }
    tag = PyObject_CallMethod(raw, "lower", NULL);
    Py_DECREF(raw);
    if (tag == NULL || PyDict_SetItem(cache, key, tag) < 0) {
        Py_DECREF(key);
        Py_XDECREF(tag);
        return NULL;
    }
    Py_DECREF(key);
    return tag;
}

/* ------------------------------------------------------------------ page links
 *
 * links_walk is visdup.page.links.read_links's loop (``root.iter("a", "area")``, each
 * element's ``get("href")``) over libxml2's nodes: no Python proxy per link element, only
 * the hrefs kept are made. Elements are visited as lxml's iter visits them (the root too,
 * document order, no namespace: an ``a`` in a namespace is not lxml's ``"a"``).
 */

/* Whether a str is blank as ``not s.strip()`` says (str.isspace's characters). */
static int
blank_text(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s); /* made by PyUnicode_DecodeUTF8: ready */
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) return 0;
    return 1;
}

static PyObject *
links_walk(PyObject *self, PyObject *args)
{
    PyObject *root_obj;
    Py_ssize_t cap;
    if (!PyArg_ParseTuple(args, "On", &root_obj, &cap)) return NULL;
    if (element_type == NULL || !PyObject_TypeCheck(root_obj, element_type)) Py_RETURN_NONE;
    vd_node *root = ((ElementHead *)root_obj)->c_node;
    if (root == NULL || root->type != N_ELEMENT) Py_RETURN_NONE;
    PyObject *hrefs = PyList_New(0);
    if (hrefs == NULL) return NULL;
    int fallback = 0, capped = 0;
    Py_ssize_t with_href = 0; /* link elements with an href, blank ones too */
    vd_node *n = root;
    while (n != NULL) {
        if (n->type == N_ELEMENT && n->ns == NULL && n->name != NULL &&
            (strcmp((const char *)n->name, "a") == 0 ||
             strcmp((const char *)n->name, "area") == 0)) {
            vd_attr *a = find_attr(n, "href");
            if (a != NULL) {
                with_href++;
                if (!capped) {
                    PyObject *v = attr_text(a, &fallback);
                    if (v == NULL) goto failed;
                    int rc = 0;
                    if (blank_text(v)) {
                    } else if (cap > 0 && PyList_GET_SIZE(hrefs) >= cap) {
                        capped = 1; /* read no more hrefs: count the elements that have one */
                    } else {
                        rc = PyList_Append(hrefs, v);
                    }
                    Py_DECREF(v);
                    if (rc < 0) goto failed;
                }
            }
        }
        /* preorder: into an element's children, else on to the next node up the tree */
        if (n->type == N_ELEMENT && n->children != NULL) {
            n = n->children;
            continue;
        }
        while (n != root && n->next == NULL) n = n->parent;
        if (n == root) break;
        n = n->next;
    }
    /* the count is the document's (XPath's //): this walk's when root is its top element,
     * the child of an XML (9) or HTML (13) document node */
    Py_ssize_t total = -1;
    if (capped) {
        int top = root->parent != NULL && (root->parent->type == 9 || root->parent->type == 13);
        total = top ? with_href : -2;
    }
    return Py_BuildValue("(Nn)", hrefs, total);
failed:
    Py_DECREF(hrefs);
    if (fallback && !PyErr_Occurred()) Py_RETURN_NONE;
    return NULL;
}

/* The lower-cased tag of an element; NULL with w->fallback or an error. */
static PyObject *
lower_tag(Walk *w, vd_node *el)
{
    if (el->ns != NULL || el->name == NULL) {
        w->fallback = 1;
        return NULL;
    }
    for (int k = 0; k < w->ntags; k++) {
        if (w->tag_names[k] == el->name) {
            Py_INCREF(w->tag_objs[k]);
            return w->tag_objs[k];
        }
    }
    PyObject *tag = lowered_tag(w->tags, el, &w->fallback);
    if (tag != NULL && w->ntags < 64) {
        w->tag_names[w->ntags] = el->name;
        w->tag_objs[w->ntags++] = tag;
    }
    return tag;
}

/* `".".join(value.split())` (sorted first when `sort`), or NULL on error. */
static PyObject *
dotted(PyObject *value, int sort)
{
    PyObject *parts = PyUnicode_Split(value, NULL, -1);
    if (parts == NULL) return NULL;
    if (sort && PyList_Sort(parts) < 0) {
        Py_DECREF(parts);
        return NULL;
    }
    PyObject *dot = PyUnicode_FromString(".");
    PyObject *out = dot ? PyUnicode_Join(dot, parts) : NULL;
    Py_XDECREF(dot);
    Py_DECREF(parts);
    return out;
}

/* An attribute's raw text: NULL when absent, "" when empty; *simple cleared when the value
 * is more than one text node (the uncached path reads it then). */
static const char *
raw_or_absent(vd_node *el, const char *name, int *simple)
{
    vd_attr *a = find_attr(el, name);
    if (a == NULL) return NULL;
    vd_node *c = a->children;
    if (c == NULL) return "";
    if (c->type != N_TEXT || c->next != NULL || c->content == NULL) {
        *simple = 0;
        return NULL;
    }
    return (const char *)c->content;
}

static void
attr_cache_open(AttrCache *c)
{
    c->slots = (AttrEntry *)calloc(ATTR_SLOTS, sizeof(AttrEntry)); /* none: no cache */
    c->count = 0;
}

static void
attr_cache_close(AttrCache *c)
{
    if (c->slots == NULL) return;
    for (size_t k = 0; k < ATTR_SLOTS; k++) {
        AttrEntry *e = &c->slots[k];
        if (e->made[0] == NULL) continue;
        for (int v = 0; v < ATTR_VALUES; v++) free(e->values[v]);
        Py_DECREF(e->made[0]);
        Py_XDECREF(e->made[1]);
    }
    free(c->slots);
    c->slots = NULL;
}

static int
same_value(const char *a, const char *b)
{
    return (a == NULL || b == NULL) ? a == b : strcmp(a, b) == 0;
}

/* The raw values of `names` (n of them) on el into values; 0 when one is not simple text. */
static int
attr_values(vd_node *el, const char *const *names, int n, const char **values)
{
    int simple = 1;
    for (int k = 0; k < ATTR_VALUES; k++) values[k] = k < n ? raw_or_absent(el, names[k], &simple) : NULL;
    return simple;
}

static uint64_t
attr_hash(const unsigned char *name, const char *const *values)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)name;
    for (int k = 0; k < ATTR_VALUES; k++) {
        h = (h ^ (values[k] == NULL ? 0xFE : 0xFF)) * 1099511628211ULL; /* no UTF-8 byte */
        for (const char *p = values[k]; p != NULL && *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    }
    return h;
}

/* The entry kept for (name, values), or the free slot where it goes (NULL: no room). */
static AttrEntry *
attr_find(AttrCache *c, uint64_t h, const unsigned char *name, const char *const *values)
{
    for (size_t k = 0; k < ATTR_SLOTS; k++) {
        AttrEntry *e = &c->slots[(h + k) & (ATTR_SLOTS - 1)];
        if (e->made[0] == NULL) return e;
        if (e->hash != h || e->name != name) continue;
        int same = 1;
        for (int v = 0; v < ATTR_VALUES && same; v++) same = same_value(e->values[v], values[v]);
        if (same) return e;
    }
    return NULL;
}

/* Keeps what was made of (name, values) in the free slot; without memory, keeps nothing. */
static void
attr_keep(AttrCache *c, AttrEntry *slot, uint64_t h, const unsigned char *name,
          const char *const *values, PyObject *first, PyObject *second)
{
    if (slot == NULL || c->count >= ATTR_SLOTS * 3 / 4) return;
    char *copies[ATTR_VALUES] = {NULL};
    for (int k = 0; k < ATTR_VALUES; k++) {
        if (values[k] != NULL && (copies[k] = strdup(values[k])) == NULL) {
            for (int j = 0; j < k; j++) free(copies[j]);
            return;
        }
    }
    slot->hash = h;
    slot->name = name;
    memcpy(slot->values, copies, sizeof(copies));
    slot->made[0] = first;
    slot->made[1] = second;
    Py_INCREF(first);
    Py_XINCREF(second);
    c->count++;
}

static const char *LABEL_ATTRS[2] = {"id", "class"};

/* Adds an element node. Returns its index, -2 when it is not walked (skipped tag),
 * -3 to stop (node cap or fallback), -1 on error. */
static Py_ssize_t
add_element(Walk *w, vd_node *el, Py_ssize_t up)
{
    PyObject *tag = lower_tag(w, el);
    if (tag == NULL) return PyErr_Occurred() ? -1 : -3;
    int skip = PySet_Contains(w->skip, tag);
    if (skip != 0) {
        Py_DECREF(tag);
        return skip < 0 ? -1 : -2;
    }
    if (PyList_GET_SIZE(w->labels) >= w->max_nodes) {
        Py_DECREF(tag);
        w->truncated = 1;
        return -3;
    }
    PyObject *ident = NULL, *cls_attr = NULL, *label = NULL, *hint = NULL, *upo = NULL;
    PyObject *cls = NULL, *id_raw = NULL;
    Py_ssize_t result = -1;
    AttrEntry *slot = NULL;
    const char *raw[ATTR_VALUES];
    uint64_t h = 0;
    if (w->seen.slots != NULL && attr_values(el, LABEL_ATTRS, 2, raw)) {
        h = attr_hash(el->name, raw);
        slot = attr_find(&w->seen, h, el->name, raw);
        if (slot != NULL && slot->made[0] != NULL) { /* met before on this page */
            label = slot->made[0];
            hint = slot->made[1];
            Py_INCREF(label);
            Py_INCREF(hint);
            goto append;
        }
    }
    id_raw = attr_value(w, el, "id");
    if (id_raw == NULL) goto out;
    if (id_raw == Py_None) {
        ident = PyUnicode_FromString("");
    } else {
        ident = PyObject_CallMethod(id_raw, "strip", NULL);
    }
    if (ident == NULL) goto out;
    cls_attr = attr_value(w, el, "class");
    if (cls_attr == NULL) goto out;
    if (cls_attr == Py_None) {
        Py_DECREF(cls_attr);
        cls_attr = PyUnicode_FromString("");
        if (cls_attr == NULL) goto out;
    }
    label = tag;
    Py_INCREF(label);
    if (w->classes) {
        PyObject *sorted_cls = dotted(cls_attr, 1);
        if (sorted_cls == NULL) goto out;
        if (PyUnicode_GET_LENGTH(sorted_cls) > 0) {
            Py_SETREF(label, PyUnicode_FromFormat("%U.%U", tag, sorted_cls));
        }
        Py_DECREF(sorted_cls);
        if (label == NULL) goto out;
    }
    cls = dotted(cls_attr, 0);
    if (cls == NULL) goto out;
    if (PyUnicode_GET_LENGTH(ident) == 0 && PyUnicode_GET_LENGTH(cls) == 0) {
        hint = tag;
        Py_INCREF(hint);
    } else if (PyUnicode_GET_LENGTH(cls) == 0) {
        hint = PyUnicode_FromFormat("%U#%U", tag, ident);
    } else if (PyUnicode_GET_LENGTH(ident) == 0) {
        hint = PyUnicode_FromFormat("%U.%U", tag, cls);
    } else {
        hint = PyUnicode_FromFormat("%U#%U.%U", tag, ident, cls);
    }
    if (hint == NULL) goto out;
    attr_keep(&w->seen, slot, h, el->name, raw, label, hint);
append:
    upo = PyLong_FromSsize_t(up);
    if (upo == NULL) goto out;
    result = PyList_GET_SIZE(w->labels);
    if (PyList_Append(w->labels, label) < 0 || PyList_Append(w->texts, Py_None) < 0 ||
        PyList_Append(w->hints, hint) < 0 || PyList_Append(w->parents, upo) < 0) {
        result = -1;
    }
out:
    if (result == -1 && !PyErr_Occurred() && w->fallback) result = -3;
    Py_XDECREF(tag);
    Py_XDECREF(id_raw);
    Py_XDECREF(ident);
    Py_XDECREF(cls_attr);
    Py_XDECREF(label);
    Py_XDECREF(cls);
    Py_XDECREF(hint);
    Py_XDECREF(upo);
    return result;
}

/* The children lxml iterates: elements, comments, entity references, PIs. */
static vd_node *
lxml_child(vd_node *c)
{
    while (c != NULL && c->type != N_ELEMENT && c->type != N_COMMENT &&
           c->type != N_ENTITY_REF && c->type != N_PI)
        c = c->next;
    return c;
}

typedef struct {
    vd_node *node, *child;
    Py_ssize_t index;
} DomFrame;

static PyObject *
dom_walk(PyObject *self, PyObject *args)
{
    PyObject *root_obj, *skip, *text_label;
    Py_ssize_t max_nodes;
    int classes, with_text;
    if (!PyArg_ParseTuple(args, "OO!Uppn", &root_obj, &PySet_Type, &skip, &text_label, &classes,
                          &with_text, &max_nodes))
        return NULL;
    if (element_type == NULL || !PyObject_TypeCheck(root_obj, element_type)) Py_RETURN_NONE;
    vd_node *root = ((ElementHead *)root_obj)->c_node;
    if (root == NULL) Py_RETURN_NONE;
    Walk w = {PyList_New(0), PyList_New(0), PyList_New(0), PyList_New(0), skip, text_label,
              PyDict_New(), PyUnicode_FromString(""), max_nodes, classes, with_text, 0, 0,
              {NULL, 0}, {NULL}, {NULL}, 0};
    attr_cache_open(&w.seen);
    PyObject *result = NULL;
    DomFrame *stack = NULL;
    Py_ssize_t sp = 0, cap = 64;
    if (!w.labels || !w.texts || !w.hints || !w.parents || !w.tags || !w.empty) goto done;
    stack = (DomFrame *)malloc(sizeof(DomFrame) * (size_t)cap);
    if (stack == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (root->type == N_ELEMENT) {
        Py_ssize_t idx = add_element(&w, root, -1);
        if (idx == -1) goto done;
        if (idx >= 0) {
            int rc = add_text(&w, root->children, idx);
            if (rc < 0) goto done;
            if (rc == 0) {
                stack[0].node = root;
                stack[0].child = lxml_child(root->children);
                stack[0].index = idx;
                sp = 1;
            }
        }
    }
    while (sp > 0 && !w.truncated && !w.fallback) {
        DomFrame *f = &stack[sp - 1];
        vd_node *c = f->child;
        if (c == NULL) { /* subtree done: its tail follows, under its parent */
            sp--;
            if (sp > 0) {
                int rc = add_text(&w, f->node->next, stack[sp - 1].index);
                if (rc < 0) goto done;
            }
            continue;
        }
        f->child = lxml_child(c->next);
        Py_ssize_t idx = -2;
        if (c->type == N_ELEMENT) {
            idx = add_element(&w, c, f->index);
            if (idx == -1) goto done;
            if (idx == -3) break;
        }
        if (idx == -2) { /* not walked: only its tail counts */
            if (add_text(&w, c->next, f->index) < 0) goto done;
            continue;
        }
        int rc = add_text(&w, c->children, idx);
        if (rc < 0) goto done;
        if (rc > 0) break;
        if (sp == cap) {
            cap *= 2;
            DomFrame *grown = (DomFrame *)realloc(stack, sizeof(DomFrame) * (size_t)cap);
            if (grown == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            stack = grown;
        }
        stack[sp].node = c;
        stack[sp].child = lxml_child(c->children);
        stack[sp].index = idx;
        sp++;
    }
    if (w.fallback) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        result = Py_BuildValue("(OOOOO)", w.labels, w.texts, w.hints, w.parents,
                               w.truncated ? Py_True : Py_False);
    }
done:
    free(stack);
    attr_cache_close(&w.seen);
    Py_XDECREF(w.labels);
    Py_XDECREF(w.texts);
    Py_XDECREF(w.hints);
    Py_XDECREF(w.parents);
    Py_XDECREF(w.tags);
    Py_XDECREF(w.empty);
    return result;
}

/* ------------------------------------------------------------------ paragraphs
 *
 * blocks_walk is the first walk of visdup.denoise._blocks over libxml2's nodes: the same
 * events as lxml's iterwalk (elements only), the same paragraph breaks, the same
 * character counts (Unicode whitespace as str.split sees it); each paragraph's text comes
 * out as Block.text reads it (whitespace runs squeezed). Elements are numbered in
 * preorder, as root.iter() yields them. None asks for the Python walk (entity references,
 * namespaced elements, undecodable text).
 */

typedef struct {
    const unsigned char *name;
    int block, heading, link;
    PyObject *tag; /* borrowed from the cache, or owned by the frame when not cached */
    int owned;
} TagFlags;

typedef struct {
    Py_ssize_t parent, position; /* the parent's number, the place among its children */
    double factor;               /* the weight factor of the element's key (0: not asked) */
} ElementInfo;

typedef struct {
    Py_ssize_t element, first, end; /* the element's paragraphs: [first, end) */
    Py_ssize_t free;                /* 1 when no heading encloses it */
} SpanInfo;

typedef struct {
    PyObject *blocks, *keys, *block_tags, *headings;
    TagFlags cache[128];
    int ncache;
    char *buf;
    size_t len, cap;
    int gap; /* whitespace stands between the paragraph's text so far and what comes next */
    Py_ssize_t chars, links;
    int fallback;
    AttrCache seen; /* weight keys by tag, class, id, role and itemprop, with their factors */
    ElementInfo *els; /* per element, in preorder */
    Py_ssize_t nel, elcap;
    SpanInfo *spans; /* per block element, in preorder */
    Py_ssize_t nspans, spancap;
    int rows;            /* the paragraphs as (kind, level, text) rows and int64 columns */
    int64_t *columns;    /* per paragraph of rows: its owner, link characters, characters */
    Py_ssize_t ncolumns, columncap;
    PyObject *kinds[2];  /* "paragraph", "heading" */
    PyObject *factor;         /* a key's weight factor, asked once per distinct key; or NULL */
    PyObject *known;          /* a dict of the factors known by key, or NULL */
} BlockWalk;

static int
tag_flags(BlockWalk *w, vd_node *el, TagFlags *out)
{
    for (int k = 0; k < w->ncache; k++) {
        if (w->cache[k].name == el->name) {
            *out = w->cache[k];
            return 0;
        }
    }
    PyObject *tag = PyUnicode_DecodeUTF8((const char *)el->name,
                                         (Py_ssize_t)strlen((const char *)el->name), NULL);
    if (tag == NULL) {
        PyErr_Clear();
        w->fallback = 1;
        return 0;
    }
    TagFlags f = {el->name, 0, 0, 0, tag, 1};
    f.block = PySet_Contains(w->block_tags, tag);
    PyObject *level = PyDict_GetItemWithError(w->headings, tag);
    if (f.block < 0 || (level == NULL && PyErr_Occurred())) {
        Py_DECREF(tag);
        return -1;
    }
    if (level != NULL) {
        f.heading = (int)PyLong_AsLong(level);
        if (f.heading == -1 && PyErr_Occurred()) {
            Py_DECREF(tag);
            return -1;
        }
    }
    f.link = PyUnicode_CompareWithASCIIString(tag, "a") == 0;
    if (w->ncache < 128) { /* the cache owns the tag now; callers borrow it */
        f.owned = 0;
        w->cache[w->ncache++] = f;
    }
    *out = f;
    return 0;
}

/* lxml's get(name) on an element, for the weight keys. */
static PyObject *
block_attr(BlockWalk *w, vd_node *el, const char *name)
{
    return node_attr(el, name, &w->fallback);
}

static const char *KEY_ATTRS[ATTR_VALUES] = {"class", "id", "role", "itemprop"};

/* (tag, class, id, role, itemprop): what visdup.denoise.class_factor reads. */
static PyObject *
weight_key(BlockWalk *w, vd_node *el, PyObject *tag)
{
    PyObject *key = PyTuple_New(5);
    if (key == NULL) return NULL;
    Py_INCREF(tag);
    PyTuple_SET_ITEM(key, 0, tag);
    for (int k = 0; k < 4; k++) {
        PyObject *v = block_attr(w, el, KEY_ATTRS[k]);
        if (v == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, k + 1, v);
    }
    return key;
}

/* The factor of a key, from the factors known (w->known) or else w->factor(key), as a new
 * reference in *made; -1 on error. */
static int
key_factor(BlockWalk *w, PyObject *key, PyObject **made)
{
    if (w->known != NULL) { /* most keys were met on earlier pages: no Python call for those */
        PyObject *known = PyDict_GetItemWithError(w->known, key);
        if (known != NULL && PyFloat_Check(known) && PyFloat_AS_DOUBLE(known) != 0.0) {
            Py_INCREF(known);
            *made = known;
            return 0;
        }
        if (known == NULL && PyErr_Occurred()) return -1;
    }
    PyObject *value = PyObject_CallOneArg(w->factor, key);
    if (value == NULL) return -1;
    if (!PyFloat_Check(value)) {
        Py_DECREF(value);
        PyErr_SetString(PyExc_TypeError, "blocks_walk: factor must give a float");
        return -1;
    }
    *made = value;
    return 0;
}

/* weight_key through the page's cache of the keys made before; with w->factor, the key's
 * factor too (a new reference in *factor), asked once per distinct key. */
static PyObject *
cached_weight_key(BlockWalk *w, vd_node *el, PyObject *tag, PyObject **factor)
{
    const char *raw[ATTR_VALUES];
    if (w->seen.slots == NULL || !attr_values(el, KEY_ATTRS, ATTR_VALUES, raw)) {
        PyObject *key = weight_key(w, el, tag);
        if (key != NULL && w->factor != NULL && key_factor(w, key, factor) < 0) Py_CLEAR(key);
        return key;
    }
    uint64_t h = attr_hash(el->name, raw);
    AttrEntry *slot = attr_find(&w->seen, h, el->name, raw);
    if (slot != NULL && slot->made[0] != NULL) {
        if (w->factor != NULL) {
            if (slot->made[1] != NULL) {
                Py_INCREF(slot->made[1]);
                *factor = slot->made[1];
            } else if (key_factor(w, slot->made[0], factor) < 0) {
                return NULL;
            }
        }
        Py_INCREF(slot->made[0]);
        return slot->made[0];
    }
    PyObject *key = weight_key(w, el, tag);
    if (key == NULL) return NULL;
    if (w->factor != NULL && key_factor(w, key, factor) < 0) {
        Py_DECREF(key);
        return NULL;
    }
    attr_keep(&w->seen, slot, h, el->name, raw, key, w->factor != NULL ? *factor : NULL);
    return key;
}

/* Room for n more bytes in the paragraph's buffer; -1 out of memory. */
static int
buf_room(BlockWalk *w, size_t n)
{
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n + 1) cap *= 2;
        char *grown = (char *)realloc(w->buf, cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        w->buf = grown;
        w->cap = cap;
    }
    return 0;
}

/* _blocks' add(): the text run starting at `first` joins the current paragraph, written as
 * Block.text reads it, " ".join(text.split()): each run of whitespace (str.isspace) one
 * space (w->gap: one is pending), none at either end. Its characters that are not
 * whitespace count for the paragraph (and for its links inside a link). Text that is not
 * valid UTF-8 asks for the Python walk. */
static int
block_text(BlockWalk *w, vd_node *first, int in_link)
{
    Py_ssize_t ink = 0;
    int gap = w->gap;
    for (vd_node *c = text_node_or_skip(first); c != NULL; c = text_node_or_skip(c->next)) {
        const unsigned char *p = c->content;
        if (p == NULL) continue;
        size_t n = strlen((const char *)p);
        /* the text only shrinks, but for the space pending from the run before */
        if (n == 0 || buf_room(w, n + 1) < 0) {
            if (n == 0) continue;
            return -1;
        }
        size_t o = w->len;
        if (squeeze_text(p, (unsigned char *)w->buf, &o, &gap, &ink) < 0) {
            w->fallback = 1;
            return 0;
        }
        w->len = o;
    }
    w->gap = gap;
    w->chars += ink;
    if (in_link) w->links += ink;
    return 0;
}

/* Room for one more item in *items, which holds `count` of *cap; -1 out of memory. */
static int
walk_room(void **items, Py_ssize_t count, Py_ssize_t *cap, size_t size)
{
    if (count < *cap) return 0;
    Py_ssize_t more = *cap ? *cap * 2 : 256;
    void *grown = realloc(*items, size * (size_t)more);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = grown;
    *cap = more;
    return 0;
}

/* The paragraph as a row (kind, level, text), its numbers to the columns; NULL on error. */
static PyObject *
make_row(BlockWalk *w, Py_ssize_t owner, int heading, int level, PyObject *text)
{
    if (walk_room((void **)&w->columns, w->ncolumns, &w->columncap, 3 * sizeof(int64_t)) < 0)
        return NULL;
    int64_t *column = &w->columns[3 * w->ncolumns++];
    column[0] = owner;
    column[1] = w->links;
    column[2] = w->chars;
    PyObject *row = PyTuple_New(3), *lv = PyLong_FromLong(level);
    if (row == NULL || lv == NULL) {
        Py_XDECREF(row);
        Py_XDECREF(lv);
        return NULL;
    }
    Py_INCREF(w->kinds[heading ? 1 : 0]);
    Py_INCREF(text);
    PyTuple_SET_ITEM(row, 0, w->kinds[heading ? 1 : 0]);
    PyTuple_SET_ITEM(row, 1, lv);
    PyTuple_SET_ITEM(row, 2, text);
    return row;
}

static int
block_flush(BlockWalk *w, Py_ssize_t owner, int heading, int level)
{
    if (w->chars) {
        PyObject *text = PyUnicode_DecodeUTF8(w->buf ? w->buf : "", (Py_ssize_t)w->len, NULL);
        if (text == NULL) {
            PyErr_Clear();
            w->fallback = 1;
            return 0;
        }
        PyObject *item;
        if (w->rows) {
            item = make_row(w, owner, heading, level, text);
            Py_DECREF(text);
        } else {
            item = Py_BuildValue("(niiNnn)", owner, heading, level, text, w->links, w->chars);
        }
        if (item == NULL || PyList_Append(w->blocks, item) < 0) {
            Py_XDECREF(item);
            return -1;
        }
        Py_DECREF(item);
    }
    w->len = 0;
    w->gap = 0;
    w->chars = w->links = 0;
    return 0;
}

/* visdup.content.blocks.hyperlink: an <a href="javascript:..."> that holds a block element
 * is text, not a link. 1 a link, 0 not, -1 an error; w->fallback set where Python must say. */
static int
block_hyperlink(BlockWalk *w, vd_node *el)
{
    vd_attr *a = find_attr(el, "href");
    if (a == NULL || a->children == NULL) return 1;
    vd_node *c = a->children;
    if (c->type != N_TEXT || c->next != NULL || c->content == NULL) {
        w->fallback = 1;
        return 1;
    }
    const unsigned char *s = c->content;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f') s++;
    static const char js[] = "javascript:";
    for (int i = 0; i < 11; i++) {
        unsigned char ch = s[i]; /* a shorter value stops at its NUL */
        if (ch >= 'A' && ch <= 'Z') ch = (unsigned char)(ch + 32);
        if (ch != (unsigned char)js[i]) return 1;
    }
    vd_node *d = el->children;
    while (d != NULL && d != el) { /* its descendants, in document order */
        if (d->type == N_ELEMENT) {
            if (d->ns != NULL) {
                w->fallback = 1;
                return 1;
            }
            TagFlags f;
            if (tag_flags(w, d, &f) < 0) return -1;
            if (w->fallback) return 1;
            if (f.owned) Py_DECREF(f.tag);
            if (f.block) return 0;
            if (d->children != NULL) {
                d = d->children;
                continue;
            }
        }
        while (d != el && d->next == NULL) d = d->parent;
        if (d != el) d = d->next;
    }
    return 1;
}

typedef struct {
    vd_node *node, *child;
    Py_ssize_t index, child_pos;
    TagFlags flags;
    Py_ssize_t span; /* position in spans, -1 when not a block element */
} BlockFrame;

/* The next element from c on; *pos counts the children lxml indexes (el[i]) passed. */
static vd_node *
walk_child(vd_node *c, int *bad, Py_ssize_t *pos)
{
    while (c != NULL && c->type != N_ELEMENT) {
        if (c->type == N_ENTITY_REF) *bad = 1;
        if (c->type == N_COMMENT || c->type == N_PI) (*pos)++;
        c = c->next;
    }
    return c;
}


/* The elements' parents (which = 0) or child positions (1) as a list; NULL on error. */
static PyObject *
element_list(const BlockWalk *w, int which)
{
    PyObject *list = PyList_New(w->nel);
    for (Py_ssize_t k = 0; list != NULL && k < w->nel; k++) {
        const ElementInfo *e = &w->els[k];
        PyObject *v = PyLong_FromSsize_t(which ? e->position : e->parent);
        if (v == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, k, v);
    }
    return list;
}

/* The spans as a dict {element: (first, end, free)}, or, for a walk that makes Block
 * objects, as int64 quads (element, first, end, free) in bytes; NULL on error. */
static PyObject *
span_results(const BlockWalk *w)
{
    if (w->rows) {
        PyObject *out = PyBytes_FromStringAndSize(NULL, w->nspans * 4 * (Py_ssize_t)sizeof(int64_t));
        if (out == NULL) return NULL;
        int64_t *q = (int64_t *)PyBytes_AS_STRING(out);
        for (Py_ssize_t k = 0; k < w->nspans; k++) {
            const SpanInfo *span = &w->spans[k];
            q[4 * k] = span->element;
            q[4 * k + 1] = span->first;
            q[4 * k + 2] = span->end;
            q[4 * k + 3] = span->free;
        }
        return out;
    }
    PyObject *spans = PyDict_New();
    for (Py_ssize_t k = 0; spans != NULL && k < w->nspans; k++) {
        const SpanInfo *span = &w->spans[k];
        PyObject *key = PyLong_FromSsize_t(span->element);
        PyObject *value =
            Py_BuildValue("(nnO)", span->first, span->end, span->free ? Py_True : Py_False);
        if (key == NULL || value == NULL || PyDict_SetItem(spans, key, value) < 0) Py_CLEAR(spans);
        Py_XDECREF(key);
        Py_XDECREF(value);
    }
    return spans;
}

/* The factors of the elements' keys as bytes of doubles; NULL on error. */
static PyObject *
factor_results(const BlockWalk *w)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, w->nel * (Py_ssize_t)sizeof(double));
    if (out == NULL) return NULL;
    double *d = (double *)PyBytes_AS_STRING(out);
    for (Py_ssize_t k = 0; k < w->nel; k++) d[k] = w->els[k].factor;
    return out;
}

/* blocks_walk(root, block_tags, headings, elements=True, rows=False, factor=None,
 * known=None): (paragraphs, parents, spans, keys, positions) with the paragraphs as tuples
 * (owner, heading, level, text, link chars, chars) and the spans as a dict; with rows, the
 * paragraphs as (kind, level, text) rows (what text prints read) with their owner, link
 * characters and characters as int64 triples apart, the spans as int64 quads (element,
 * first, end, free), and the factor(key) of every element as doubles (None without a
 * factor), read once per distinct key of the page from `known` (a dict by key) or else
 * asked of factor: (rows, parents, spans, keys, positions, factors, columns). */
static PyObject *
blocks_walk(PyObject *self, PyObject *args)
{
    PyObject *root_obj, *block_tags, *headings, *factor = Py_None, *known = Py_None;
    int elements = 1; /* 0: the paragraphs alone (no keys, parents, positions or spans) */
    int rows = 0;
    if (!PyArg_ParseTuple(args, "OO!O!|ppOO", &root_obj, &PySet_Type, &block_tags, &PyDict_Type,
                          &headings, &elements, &rows, &factor, &known))
        return NULL;
    if (known != Py_None && !PyDict_Check(known)) {
        PyErr_SetString(PyExc_TypeError, "blocks_walk: known factors must be a dict");
        return NULL;
    }
    if (element_type == NULL || !PyObject_TypeCheck(root_obj, element_type)) Py_RETURN_NONE;
    vd_node *root = ((ElementHead *)root_obj)->c_node;
    if (root == NULL || root->type != N_ELEMENT) Py_RETURN_NONE;
    BlockWalk w;
    memset(&w, 0, sizeof(w));
    if (rows) {
        w.rows = 1;
        if (factor != Py_None && elements) {
            w.factor = factor;
            if (known != Py_None) w.known = known;
        }
    }
    w.blocks = PyList_New(0);
    w.keys = PyList_New(0);
    w.kinds[0] = PyUnicode_InternFromString("paragraph");
    w.kinds[1] = PyUnicode_InternFromString("heading");
    w.block_tags = block_tags;
    w.headings = headings;
    if (elements) attr_cache_open(&w.seen);
    PyObject *result = NULL;
    BlockFrame *stack = NULL;
    int *hstack = NULL;
    Py_ssize_t sp = 0, cap = 64, hsp = 0, hcap = 16, low = 0, count = 0, link = 0;
    int kind = 0, level = 0, bad = 0;
    if (!w.blocks || !w.keys || !w.kinds[0] || !w.kinds[1]) goto done;
    stack = (BlockFrame *)malloc(sizeof(BlockFrame) * (size_t)cap);
    hstack = (int *)malloc(sizeof(int) * (size_t)hcap);
    if (stack == NULL || hstack == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    vd_node *next = root;
    Py_ssize_t parent = -1, next_pos = 0;
    for (;;) {
        if (next != NULL) { /* start event */
            vd_node *el = next;
            BlockFrame f = {el, NULL, count++, 0, {NULL, 0, 0, 0, NULL, 0}, -1};
            if (el->ns != NULL) w.fallback = 1;
            if (w.fallback || tag_flags(&w, el, &f.flags) < 0) goto done_or_fallback;
            if (w.fallback) goto done_or_fallback;
            if (elements) {
                PyObject *made = NULL;
                PyObject *key = cached_weight_key(&w, el, f.flags.tag, &made);
                if (f.flags.owned) Py_DECREF(f.flags.tag);
                f.flags.tag = NULL;
                if (key == NULL) goto done_or_fallback;
                int rc = PyList_Append(w.keys, key);
                Py_DECREF(key);
                double m = made != NULL ? PyFloat_AS_DOUBLE(made) : 0.0;
                Py_XDECREF(made);
                if (rc < 0 || walk_room((void **)&w.els, w.nel, &w.elcap, sizeof(ElementInfo)) < 0)
                    goto done;
                w.els[w.nel++] = (ElementInfo){parent, next_pos, m};
            } else {
                if (f.flags.owned) Py_DECREF(f.flags.tag);
                f.flags.tag = NULL;
            }
            if (sp == cap) {
                cap *= 2;
                BlockFrame *grown = (BlockFrame *)realloc(stack, sizeof(BlockFrame) * (size_t)cap);
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                stack = grown;
            }
            stack[sp++] = f;
            BlockFrame *top = &stack[sp - 1];
            if (f.flags.block) {
                int enclosed = hsp > 0;
                if (f.flags.heading) {
                    if (hsp == hcap) {
                        hcap *= 2;
                        int *grown = (int *)realloc(hstack, sizeof(int) * (size_t)hcap);
                        if (grown == NULL) {
                            PyErr_NoMemory();
                            goto done;
                        }
                        hstack = grown;
                    }
                    hstack[hsp++] = f.flags.heading;
                }
                if (block_flush(&w, low ? stack[low - 1].index : 0, kind, level) < 0) goto done;
                low = sp;
                kind = hsp > 0;
                level = hsp > 0 ? hstack[hsp - 1] : 0;
                if (elements) {
                    if (walk_room((void **)&w.spans, w.nspans, &w.spancap, sizeof(SpanInfo)) < 0)
                        goto done;
                    top->span = w.nspans;
                    w.spans[w.nspans++] =
                        (SpanInfo){f.index, PyList_GET_SIZE(w.blocks), -1, enclosed ? 0 : 1};
                }
            }
            if (f.flags.link) {
                int real = block_hyperlink(&w, el);
                if (real < 0) goto done;
                if (w.fallback) goto done_or_fallback;
                top->flags.link = real; /* the end event reads it from the frame */
                if (real) link++;
            }
            if (block_text(&w, el->children, link > 0) < 0) goto done;
            top->child_pos = 0;
            top->child = walk_child(el->children, &bad, &top->child_pos);
            parent = f.index;
            next = NULL;
        }
        if (w.fallback || bad) goto done_or_fallback;
        BlockFrame *top = &stack[sp - 1];
        if (top->child != NULL) { /* descend */
            next = top->child;
            next_pos = top->child_pos;
            top->child_pos++;
            top->child = walk_child(next->next, &bad, &top->child_pos);
            parent = top->index;
            continue;
        }
        /* end event */
        BlockFrame f = *top;
        if (f.flags.link) link--;
        if (f.flags.block) {
            if (f.flags.heading) hsp--;
            if (block_flush(&w, low ? stack[low - 1].index : 0, kind, level) < 0) goto done;
            low = sp;
            kind = hsp > 0;
            level = hsp > 0 ? hstack[hsp - 1] : 0;
            if (elements) w.spans[f.span].end = PyList_GET_SIZE(w.blocks);
        }
        sp--;
        if (sp < low) low = sp;
        if (sp == 0) break;
        if (block_text(&w, f.node->next, link > 0) < 0) goto done;
        parent = stack[sp - 1].index;
    }
    if (block_flush(&w, low ? stack[low - 1].index : 0, kind, level) < 0) goto done;
done_or_fallback:
    if (PyErr_Occurred()) goto done;
    if (w.fallback || bad) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        PyObject *parents = element_list(&w, 0), *positions = element_list(&w, 1);
        PyObject *spans = span_results(&w);
        PyObject *factors = NULL;
        if (w.factor != NULL) {
            factors = factor_results(&w);
        } else {
            factors = Py_None;
            Py_INCREF(factors);
        }
        PyObject *columns = w.rows ? PyBytes_FromStringAndSize(
                                         (const char *)w.columns,
                                         w.ncolumns * 3 * (Py_ssize_t)sizeof(int64_t))
                                   : NULL;
        if (parents != NULL && positions != NULL && spans != NULL && factors != NULL) {
            if (w.rows && columns != NULL)
                result = PyTuple_Pack(7, w.blocks, parents, spans, w.keys, positions, factors,
                                      columns);
            else if (!w.rows)
                result = PyTuple_Pack(5, w.blocks, parents, spans, w.keys, positions);
        }
        Py_XDECREF(columns);
        Py_XDECREF(parents);
        Py_XDECREF(positions);
        Py_XDECREF(spans);
        Py_XDECREF(factors);
    }
done:
    free(stack);
    free(hstack);
    free(w.buf);
    free(w.els);
    free(w.spans);
    free(w.columns);
    attr_cache_close(&w.seen);
    for (int k = 0; k < w.ncache; k++) Py_XDECREF(w.cache[k].tag);
    Py_XDECREF(w.blocks);
    Py_XDECREF(w.keys);
    Py_XDECREF(w.kinds[0]);
    Py_XDECREF(w.kinds[1]);
    return result;
}

/* ------------------------------------------------------------------ invisible nodes
 *
 * invisible_scan is the first part of visdup.denoise.remove_invisible over libxml2's
 * nodes: the never-rendered elements to remove (outermost only, in document order), the
 * page's <style> texts with their media, and the inline styles of the elements that stay.
 * Elements are named by their path of child positions from root, as lxml indexes children
 * (el[i] counts elements, comments, entity references and PIs). None asks for Python.
 * Paths cost their depth each: past MAX_PATH_WORK positions in all (a tree built through
 * lxml's API thousands of levels deep, styled all the way down) Python scans instead, in
 * linear time.
 */
#define MAX_PATH_WORK 4000000

/* An element's .text as a new str, Py_None when there is none or it is empty. */
static PyObject *
run_text(vd_node *first, int *fallback)
{
    vd_node *t = text_node_or_skip(first);
    size_t total = 0;
    for (vd_node *c = t; c != NULL; c = text_node_or_skip(c->next))
        if (c->content != NULL) total += strlen((const char *)c->content);
    if (total == 0) Py_RETURN_NONE;
    char *buf = (char *)malloc(total + 1);
    if (buf == NULL) return PyErr_NoMemory();
    size_t pos = 0;
    for (vd_node *c = t; c != NULL; c = text_node_or_skip(c->next)) {
        if (c->content == NULL) continue;
        size_t n = strlen((const char *)c->content);
        memcpy(buf + pos, c->content, n);
        pos += n;
    }
    PyObject *s = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)pos, NULL);
    free(buf);
    if (s == NULL) {
        PyErr_Clear();
        *fallback = 1;
    }
    return s;
}

static PyObject *
path_tuple(const Py_ssize_t *apos, Py_ssize_t depth)
{
    PyObject *t = PyTuple_New(depth);
    if (t == NULL) return NULL;
    for (Py_ssize_t k = 0; k < depth; k++) {
        PyObject *n = PyLong_FromSsize_t(apos[k + 1]);
        if (n == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, n);
    }
    return t;
}

/* What invisible_scan reads of an element's tag, kept by the name's pointer. */
typedef struct {
    const unsigned char *name;
    int style, dialog, never;
} ScanTag;
#define SCAN_TAGS 64

static PyObject *
invisible_scan(PyObject *self, PyObject *args)
{
    ScanTag kinds[SCAN_TAGS];
    int nkinds = 0;
    PyObject *root_obj, *never_tags, *names = NULL;
    if (!PyArg_ParseTuple(args, "OO!|O!", &root_obj, &PySet_Type, &never_tags, &PyTuple_Type,
                          &names))
        return NULL;
    if (element_type == NULL || !PyObject_TypeCheck(root_obj, element_type)) Py_RETURN_NONE;
    vd_node *root = ((ElementHead *)root_obj)->c_node;
    if (root == NULL || root->type != N_ELEMENT) Py_RETURN_NONE;
    /* the elements named (as root.iter(*names) matches them: the name exactly) */
    const char *wanted[8];
    Py_ssize_t nwanted = names != NULL ? PyTuple_GET_SIZE(names) : 0;
    if (nwanted > 8) Py_RETURN_NONE;
    for (Py_ssize_t k = 0; k < nwanted; k++) {
        PyObject *name = PyTuple_GET_ITEM(names, k);
        if (!PyUnicode_Check(name)) Py_RETURN_NONE;
        wanted[k] = PyUnicode_AsUTF8(name);
        if (wanted[k] == NULL) return NULL;
    }
    int fallback = 0;
    PyObject *cache = PyDict_New();
    PyObject *outer = PyList_New(0), *sheets = PyList_New(0), *styles = PyList_New(0);
    PyObject *named = PyList_New(0);
    PyObject *result = NULL;
    /* stack[d]: the open element at depth d; apos[d]: its child position; cnt[d]: lxml
     * children seen so far at depth d. */
    vd_node **stack = NULL;
    Py_ssize_t *apos = NULL, *cnt = NULL;
    Py_ssize_t sp = 0, cap = 64, removed_at = -1, path_work = 0;
    if (!cache || !outer || !sheets || !styles || !named) goto done;
    stack = (vd_node **)malloc(sizeof(vd_node *) * (size_t)cap);
    apos = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(cap + 1));
    cnt = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(cap + 1));
    if (stack == NULL || apos == NULL || cnt == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    cnt[0] = 0;
    vd_node *cur = root;
    while (cur != NULL) {
        int type = cur->type;
        if (type == N_ELEMENT || type == N_COMMENT || type == N_PI || type == N_ENTITY_REF) {
            apos[sp] = cnt[sp]++;
        }
        if (type == N_ENTITY_REF || (type == N_ELEMENT && (cur->ns != NULL || !cur->name))) {
            fallback = 1;
            break;
        }
        if (type == N_ELEMENT) {
            for (Py_ssize_t k = 0; k < nwanted; k++) {
                if (strcmp((const char *)cur->name, wanted[k]) != 0) continue;
                path_work += sp;
                if (path_work > MAX_PATH_WORK) { /* too deep in all: Python iterates */
                    fallback = 1;
                    break;
                }
                PyObject *path = path_tuple(apos, sp);
                if (path == NULL || PyList_Append(named, path) < 0) {
                    Py_XDECREF(path);
                    goto done;
                }
                Py_DECREF(path);
                break;
            }
            if (fallback) break;
            /* what the tag says, by its name's pointer (libxml2 keeps one copy of each name
             * per document): the lower-cased str and the set are asked once per name */
            int k = 0;
            while (k < nkinds && kinds[k].name != cur->name) k++;
            if (k == nkinds) {
                PyObject *tag = lowered_tag(cache, cur, &fallback);
                if (tag == NULL) {
                    if (PyErr_Occurred()) goto done;
                    break;
                }
                ScanTag made = {cur->name, PyUnicode_CompareWithASCIIString(tag, "style") == 0,
                                PyUnicode_CompareWithASCIIString(tag, "dialog") == 0,
                                PySet_Contains(never_tags, tag)};
                Py_DECREF(tag);
                if (made.never < 0) goto done;
                if (nkinds < SCAN_TAGS) {
                    kinds[nkinds++] = made;
                }
                else {
                    kinds[k = SCAN_TAGS - 1] = made; /* a page of many names: the last slot */
                }
            }
            const int is_style = kinds[k].style, is_dialog = kinds[k].dialog;
            int never = kinds[k].never;
            never = never || find_attr(cur, "hidden") != NULL ||
                    (is_dialog && find_attr(cur, "open") == NULL);
            if (is_style) {
                PyObject *text = run_text(cur->children, &fallback);
                if (text == NULL) {
                    if (PyErr_Occurred()) goto done;
                    break;
                }
                if (text != Py_None) {
                    vd_attr *a = find_attr(cur, "media");
                    PyObject *media = a ? attr_text(a, &fallback) : (Py_INCREF(Py_None), Py_None);
                    if (media == NULL) {
                        Py_DECREF(text);
                        if (PyErr_Occurred()) goto done;
                        break;
                    }
                    PyObject *item = Py_BuildValue("(NN)", text, media);
                    if (item == NULL || PyList_Append(sheets, item) < 0) {
                        Py_XDECREF(item);
                        goto done;
                    }
                    Py_DECREF(item);
                } else {
                    Py_DECREF(text);
                }
            }
            if (removed_at < 0) {
                vd_attr *a;
                if ((never && cur != root) || find_attr(cur, "style") != NULL) {
                    path_work += sp;
                    if (path_work > MAX_PATH_WORK) {
                        fallback = 1;
                        break;
                    }
                }
                if (never && cur != root) {
                    removed_at = sp;
                    PyObject *path = path_tuple(apos, sp);
                    if (path == NULL || PyList_Append(outer, path) < 0) {
                        Py_XDECREF(path);
                        goto done;
                    }
                    Py_DECREF(path);
                } else if ((a = find_attr(cur, "style")) != NULL) {
                    PyObject *style = attr_text(a, &fallback);
                    if (style == NULL) {
                        if (PyErr_Occurred()) goto done;
                        break;
                    }
                    PyObject *path = path_tuple(apos, sp);
                    PyObject *item = path ? Py_BuildValue("(NN)", path, style) : NULL;
                    if (path == NULL) Py_DECREF(style);
                    if (item == NULL || PyList_Append(styles, item) < 0) {
                        Py_XDECREF(item);
                        goto done;
                    }
                    Py_DECREF(item);
                }
            }
            if (cur->children != NULL) { /* descend */
                if (sp + 1 >= cap) {
                    cap *= 2;
                    vd_node **s2 = (vd_node **)realloc(stack, sizeof(vd_node *) * (size_t)cap);
                    if (s2 != NULL) stack = s2;
                    Py_ssize_t *a2 = (Py_ssize_t *)realloc(apos, sizeof(Py_ssize_t) * (size_t)(cap + 1));
                    if (a2 != NULL) apos = a2;
                    Py_ssize_t *c2 = (Py_ssize_t *)realloc(cnt, sizeof(Py_ssize_t) * (size_t)(cap + 1));
                    if (c2 != NULL) cnt = c2;
                    if (s2 == NULL || a2 == NULL || c2 == NULL) {
                        PyErr_NoMemory();
                        goto done;
                    }
                }
                stack[sp++] = cur;
                cnt[sp] = 0;
                cur = cur->children;
                continue;
            }
        }
        /* the next node in preorder: a sibling, else an ancestor's sibling */
        for (;;) {
            if (cur == root) {
                cur = NULL;
                break;
            }
            if (cur->next != NULL) {
                cur = cur->next;
                break;
            }
            if (sp == 0) {
                cur = NULL;
                break;
            }
            cur = stack[--sp];
        }
        if (removed_at >= 0 && sp <= removed_at) removed_at = -1;
    }
    if (fallback) {
        result = Py_None;
        Py_INCREF(result);
    } else if (names != NULL) {
        result = Py_BuildValue("(OOOO)", outer, sheets, styles, named);
    } else {
        result = Py_BuildValue("(OOO)", outer, sheets, styles);
    }
done:
    free(stack);
    free(apos);
    free(cnt);
    Py_XDECREF(cache);
    Py_XDECREF(outer);
    Py_XDECREF(sheets);
    Py_XDECREF(styles);
    Py_XDECREF(named);
    return result;
}

/* Checks on a small tree that lxml's element and libxml2's node layouts are as declared. */
static int
probe_layout(void)
{
    PyObject *etree = PyImport_ImportModule("lxml.etree");
    PyObject *cls = NULL, *root = NULL, *sub = NULL, *attrs = NULL, *text = NULL, *tail = NULL;
    int ok = 0;
    if (etree == NULL) goto out;
    cls = PyObject_GetAttrString(etree, "_Element");
    if (cls == NULL || !PyType_Check(cls) ||
        ((PyTypeObject *)cls)->tp_basicsize < (Py_ssize_t)sizeof(ElementHead))
        goto out;
    root = PyObject_CallMethod(etree, "Element", "s", "visdup-probe");
    attrs = Py_BuildValue("{ss}", "class", "x");
    if (root == NULL || attrs == NULL) goto out;
    sub = PyObject_CallMethod(etree, "SubElement", "OsO", root, "b", attrs);
    text = PyUnicode_FromString("t");
    tail = PyUnicode_FromString("u");
    if (sub == NULL || text == NULL || tail == NULL ||
        PyObject_SetAttrString(sub, "text", text) < 0 ||
        PyObject_SetAttrString(sub, "tail", tail) < 0)
        goto out;
    if (!PyObject_TypeCheck(root, (PyTypeObject *)cls) ||
        !PyObject_TypeCheck(sub, (PyTypeObject *)cls))
        goto out;
    vd_node *r = ((ElementHead *)root)->c_node, *s = ((ElementHead *)sub)->c_node;
    ok = r != NULL && s != NULL && r->type == N_ELEMENT && r->name != NULL &&
         strcmp((const char *)r->name, "visdup-probe") == 0 && r->children == s &&
         s->parent == r && s->type == N_ELEMENT && s->ns == NULL &&
         s->properties != NULL && s->properties->name != NULL &&
         strcmp((const char *)s->properties->name, "class") == 0 &&
         s->properties->ns == NULL && s->properties->next == NULL &&
         s->properties->children != NULL && s->properties->children->type == N_TEXT &&
         s->properties->children->content != NULL &&
         strcmp((const char *)s->properties->children->content, "x") == 0 &&
         s->children != NULL && s->children->type == N_TEXT &&
         strcmp((const char *)s->children->content, "t") == 0 && s->next != NULL &&
         s->next->type == N_TEXT && strcmp((const char *)s->next->content, "u") == 0 &&
         s->next->prev == s;
out:
    if (PyErr_Occurred()) PyErr_Clear();
    if (ok) {
        Py_INCREF(cls);
        element_type = (PyTypeObject *)cls;
    }
    Py_XDECREF(etree);
    Py_XDECREF(cls);
    Py_XDECREF(root);
    Py_XDECREF(sub);
    Py_XDECREF(attrs);
    Py_XDECREF(text);
    Py_XDECREF(tail);
    return ok;
}

/* subtree_sizes(parents): the size of every node's subtree, from preorder parent links
 * (a node's parent comes before it; the root's is -1). The loop visdup runs on every page
 * for the denoise walk and the DOM tree, here without a Python step per node. */
static PyObject *
subtree_sizes(PyObject *self, PyObject *arg)
{
    (void)self;
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "subtree_sizes takes a list of parent indices");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(arg);
    Py_ssize_t *parent = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *size = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(Py_ssize_t));
    PyObject *out = NULL;
    if (parent == NULL || size == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyList_GET_ITEM(arg, i));
        if (p == -1 && PyErr_Occurred()) goto done;
        if (i > 0 && (p < 0 || p >= i)) {
            PyErr_Format(PyExc_ValueError, "node %zd has parent %zd: not a preorder", i, p);
            goto done;
        }
        parent[i] = p;
        size[i] = 1;
    }
    for (Py_ssize_t i = n - 1; i > 0; i--) size[parent[i]] += size[i];
    out = PyList_New(n);
    if (out == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyLong_FromSsize_t(size[i]);
        if (v == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, v);
    }
done:
    PyMem_Free(parent);
    PyMem_Free(size);
    return out;
}

/* ------------------------------------------------------------------ text lengths
 *
 * text_length is XPath's string-length(normalize-space(.)) of an element without building
 * the string: the text and CDATA nodes below it in document order, XML's four blanks
 * collapsed and trimmed, characters counted. -1 asks for XPath (not an element of a probed
 * lxml, or an entity reference whose text lies elsewhere).
 */
typedef struct {
    Py_ssize_t chars, runs; /* characters counted; blank runs between two of them */
    char lead, trail;       /* a blank before the first character / after the last */
    char any;               /* some character at all */
    char poisoned;          /* an entity reference: XPath must answer */
} TLPart;

/* b joined after a: the blank run between them counts once, and only between two characters */
static inline void
tl_join(TLPart *a, const TLPart *b)
{
    if (b->poisoned) a->poisoned = 1;
    if (!b->any) {
        if (b->lead) a->trail = 1, a->lead = a->any ? a->lead : 1;
        return;
    }
    if (!a->any) {
        char lead = a->lead || b->lead;
        char poisoned = a->poisoned;
        *a = *b;
        a->lead = lead;
        a->poisoned = poisoned || b->poisoned;
        return;
    }
    a->runs += b->runs + ((a->trail || b->lead) ? 1 : 0);
    a->chars += b->chars;
    a->trail = b->trail;
}

static void
tl_text(TLPart *part, const unsigned char *p)
{
    TLPart t = {0, 0, 0, 0, 0, 0};
    int pending = 0;
    for (; p != NULL && *p; p++) {
        unsigned char c = *p;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (!t.any) t.lead = 1;
            pending = 1;
            continue;
        }
        if ((c & 0xC0) == 0x80) continue; /* inside a character already counted */
        if (t.any && pending) t.runs++;
        t.chars++;
        t.any = 1;
        pending = 0;
    }
    t.trail = (char)(t.any && pending);
    if (!t.any) t.lead = (char)pending; /* only blanks: one blank, opening and closing */
    tl_join(part, &t);
}

static PyObject *
text_length(PyObject *self, PyObject *arg)
{
    (void)self;
    if (element_type == NULL || !PyObject_TypeCheck(arg, element_type)) return PyLong_FromLong(-1);
    vd_node *root = ((ElementHead *)arg)->c_node;
    if (root == NULL || root->type != N_ELEMENT) return PyLong_FromLong(-1);
    TLPart part = {0, 0, 0, 0, 0, 0};
    vd_node *cur = root->children;
    while (cur != NULL) {
        if (cur->type == N_TEXT || cur->type == N_CDATA) {
            tl_text(&part, cur->content);
        } else if (cur->type == N_ENTITY_REF) {
            return PyLong_FromLong(-1);
        }
        if (cur->type == N_ELEMENT && cur->children != NULL) {
            cur = cur->children;
            continue;
        }
        while (cur != root && cur->next == NULL) cur = cur->parent;
        if (cur == root || cur == NULL) break;
        cur = cur->next;
    }
    return PyLong_FromSsize_t(part.chars + part.runs);
}

/* text_lengths(root) is text_length of every element under root (root included) from one
 * walk: a subtree's normalised length composes from its parts' (the characters that are no
 * blank, the blank runs between them, and whether a blank opens or closes the part), so
 * each element's is its children's joined, and no text is read twice. The answer is a
 * capsule for text_length_of(table, element): the length, -1 for XPath to answer (an entity
 * reference below it), -2 when the element is not under root. The table is of the tree as
 * it was: read it before the tree changes. */

typedef struct {
    size_t mask;
    size_t used; /* keys held: the table doubles before it is half full */
    const vd_node **keys;
    Py_ssize_t *values;
} TLTable;

static inline size_t
tl_slot(const TLTable *t, const vd_node *node)
{
    uintptr_t x = (uintptr_t)node;
    x ^= x >> 17;
    x *= 0xed5ad4bbU;
    x ^= x >> 11;
    return (size_t)x & t->mask;
}

static void
tl_put(TLTable *t, const vd_node *node, Py_ssize_t value)
{
    size_t i = tl_slot(t, node);
    while (t->keys[i] != NULL && t->keys[i] != node) i = (i + 1) & t->mask;
    if (t->keys[i] == NULL) t->used++;
    t->keys[i] = node;
    t->values[i] = value;
}

/* Room for one more key: the table doubled (and its keys placed again) when half full;
 * 0 out of memory, the table as it was. */
static int
tl_room(TLTable *t)
{
    if ((t->used + 1) * 2 <= t->mask + 1) return 1;
    size_t size = (t->mask + 1) * 2;
    const vd_node **keys = PyMem_Calloc(size, sizeof(vd_node *));
    Py_ssize_t *values = PyMem_Malloc(size * sizeof(Py_ssize_t));
    if (keys == NULL || values == NULL) {
        PyMem_Free(keys);
        PyMem_Free(values);
        return 0;
    }
    TLTable grown = {size - 1, 0, keys, values};
    for (size_t i = 0; i <= t->mask; i++) {
        if (t->keys[i] != NULL) tl_put(&grown, t->keys[i], t->values[i]);
    }
    PyMem_Free(t->keys);
    PyMem_Free(t->values);
    *t = grown;
    return 1;
}

static void
tl_table_free(TLTable *t)
{
    if (t == NULL) return;
    PyMem_Free(t->keys);
    PyMem_Free(t->values);
    PyMem_Free(t);
}

static void
tl_free(PyObject *capsule)
{
    tl_table_free(PyCapsule_GetPointer(capsule, "visdup.text_lengths"));
}

static PyObject *
text_lengths(PyObject *self, PyObject *arg)
{
    (void)self;
    if (element_type == NULL || !PyObject_TypeCheck(arg, element_type)) Py_RETURN_NONE;
    vd_node *root = ((ElementHead *)arg)->c_node;
    if (root == NULL || root->type != N_ELEMENT) Py_RETURN_NONE;
    /* One walk: the table and the stack grow as it goes. Each pass over libxml2's nodes
     * waits on memory more than it computes, so none is made to count them first. */
    size_t stack_cap = 64;
    TLTable *table = PyMem_Calloc(1, sizeof(TLTable));
    TLPart *stack = PyMem_Malloc(stack_cap * sizeof(TLPart));
    if (table != NULL) {
        table->mask = 1023;
        table->keys = PyMem_Calloc(table->mask + 1, sizeof(vd_node *));
        table->values = PyMem_Malloc((table->mask + 1) * sizeof(Py_ssize_t));
    }
    if (table == NULL || stack == NULL || table->keys == NULL || table->values == NULL) {
        goto nomem;
    }
    /* stack[d]: what the open element at depth d holds so far */
    Py_ssize_t top = 0;
    memset(&stack[0], 0, sizeof(TLPart));
    vd_node *cur = root->children;
    while (cur != NULL) {
        if (cur->type == N_TEXT || cur->type == N_CDATA) {
            tl_text(&stack[top], cur->content);
        } else if (cur->type == N_ENTITY_REF) {
            stack[top].poisoned = 1;
        }
        if (cur->type == N_ELEMENT) {
            if (cur->children != NULL) {
                if ((size_t)top + 1 >= stack_cap) {
                    TLPart *deeper = PyMem_Realloc(stack, stack_cap * 2 * sizeof(TLPart));
                    if (deeper == NULL) goto nomem;
                    stack = deeper;
                    stack_cap *= 2;
                }
                memset(&stack[++top], 0, sizeof(TLPart));
                cur = cur->children;
                continue;
            }
            if (!tl_room(table)) goto nomem;
            tl_put(table, cur, 0); /* an empty element */
        }
        while (cur != root && cur->next == NULL) {
            cur = cur->parent;
            if (cur == root) break;
            /* cur, an element, is closed: its part joins its parent's */
            TLPart *done = &stack[top--];
            if (!tl_room(table)) goto nomem;
            tl_put(table, cur, done->poisoned ? -1 : done->chars + done->runs);
            tl_join(&stack[top], done);
        }
        if (cur == root || cur == NULL) break;
        cur = cur->next;
    }
    if (!tl_room(table)) goto nomem;
    tl_put(table, root, stack[0].poisoned ? -1 : stack[0].chars + stack[0].runs);
    PyMem_Free(stack);
    PyObject *capsule = PyCapsule_New(table, "visdup.text_lengths", tl_free);
    if (capsule == NULL) tl_table_free(table);
    return capsule;
nomem:
    tl_table_free(table);
    PyMem_Free(stack);
    return PyErr_NoMemory();
}

static PyObject *
text_length_of(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *el;
    if (!PyArg_ParseTuple(args, "OO", &capsule, &el)) return NULL;
    TLTable *t = PyCapsule_GetPointer(capsule, "visdup.text_lengths");
    if (t == NULL) return NULL;
    if (element_type == NULL || !PyObject_TypeCheck(el, element_type)) return PyLong_FromLong(-2);
    const vd_node *node = ((ElementHead *)el)->c_node;
    if (node == NULL) return PyLong_FromLong(-2);
    size_t i = tl_slot(t, node);
    while (t->keys[i] != NULL) {
        if (t->keys[i] == node) return PyLong_FromSsize_t(t->values[i]);
        i = (i + 1) & t->mask;
    }
    return PyLong_FromLong(-2);
}

/* ------------------------------------------------------------------ layout signatures
 *
 * layout_walk is the walk of visdup.templates.signature.layout_signature (nodes labelled by
 * tag) over libxml2's nodes: the same frames, element budget and compression. A compressed
 * subtree is a run of (label, size, frame) entries in one arena and a 64-bit structural
 * hash; a node's own run replaces its children's runs as it is popped, so the arena holds
 * the open frames' children and nothing more. (The Python walk hashes a tuple of the label
 * and the kept children's hashes: either tells equal subtrees from unequal ones, bar a
 * collision.) None asks for the Python walk: a namespaced element, a name not UTF-8.
 */

typedef struct {
    PyObject *label; /* borrowed: from the walk's tag cache, or an argument */
    Py_ssize_t size;
    char frame;
} LEntry;

typedef struct {
    uint64_t hash;
    Py_ssize_t at, len; /* its entries in the arena */
} LPiece;

typedef struct {
    vd_node *node, *child; /* child: the next element child to look at */
    PyObject *label;       /* borrowed */
    int left, stub;
    char inside, framed;
    Py_ssize_t got_start, arena_start;
} LFrame;

static vd_node *
next_element(vd_node *c)
{
    while (c != NULL && c->type != N_ELEMENT) c = c->next;
    return c;
}

/* Grows *buf (of *cap items of `size` bytes) to hold `need` items; 0, or -1 (no memory). */
static int
grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t size)
{
    if (need <= *cap) return 0;
    Py_ssize_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *grown = realloc(*buf, size * (size_t)n);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = grown;
    *cap = n;
    return 0;
}

static vd_node *
element_node(PyObject *obj)
{
    if (obj == Py_None || element_type == NULL || !PyObject_TypeCheck(obj, element_type))
        return NULL;
    return ((ElementHead *)obj)->c_node;
}

/* ------------------------------------------------------------------ hidden elements
 *
 * What visdup.content.visibility asks of the tree once the page's styles have hidden some
 * elements: how much prose each of them holds (a hidden element holding most of the page's
 * is kept), and which of them are outermost (the ones to remove). Both are answered from one
 * walk over libxml2's nodes, with the hidden elements in a table by node, so that no Python
 * proxy is made for the thousands of elements that are not hidden. */

/* A table of nodes, sized for `count` keys; NULL (and an error set) out of memory. */
static TLTable *
node_table(Py_ssize_t count)
{
    size_t size = 16;
    while (size < (size_t)count * 2) size <<= 1;
    TLTable *table = PyMem_Calloc(1, sizeof(TLTable));
    if (table != NULL) {
        table->mask = size - 1;
        table->keys = PyMem_Calloc(size, sizeof(vd_node *));
        table->values = PyMem_Calloc(size, sizeof(Py_ssize_t));
    }
    if (table == NULL || table->keys == NULL || table->values == NULL) {
        tl_table_free(table);
        PyErr_NoMemory();
        return NULL;
    }
    return table;
}

/* The slot holding `node`, or -1. */
static Py_ssize_t
tl_find(const TLTable *t, const vd_node *node)
{
    size_t i = tl_slot(t, node);
    while (t->keys[i] != NULL) {
        if (t->keys[i] == node) return (Py_ssize_t)i;
        i = (i + 1) & t->mask;
    }
    return -1;
}

/* The nodes of a list of elements in a table (value: the element's position in the list,
 * or 0 with `zero`); NULL when one is not an element (the Python walk answers), or out of
 * memory (an error set). */
static TLTable *
element_table(PyObject *elements, int zero)
{
    Py_ssize_t count = PyList_GET_SIZE(elements);
    TLTable *table = node_table(count);
    if (table == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        vd_node *node = element_node(PyList_GET_ITEM(elements, i));
        if (node == NULL || node->type != N_ELEMENT) {
            tl_table_free(table);
            return NULL;
        }
        tl_put(table, node, zero ? 0 : i);
    }
    return table;
}

/* The arguments (root, [elements]) of own_text_sizes and outermost_of, with the elements'
 * table (element_table's `zero`): 1; 0 when the Python walk answers; -1 on an error. */
static int
root_and_table(PyObject *args, int zero, vd_node **root, PyObject **elements, TLTable **table)
{
    PyObject *root_obj;
    if (!PyArg_ParseTuple(args, "OO!", &root_obj, &PyList_Type, elements)) return -1;
    *root = element_node(root_obj);
    if (*root == NULL || (*root)->type != N_ELEMENT) return 0;
    *table = element_table(*elements, zero);
    if (*table == NULL) return PyErr_Occurred() ? -1 : 0;
    return 1;
}

/* char_count (visdup.content.blocks) of the text run lxml reads from `first` (an element's
 * .text from its children, a tail from its next sibling): its characters that are not
 * whitespace (str.isspace); -1 for text that is not UTF-8. */
static Py_ssize_t
run_ink(vd_node *first)
{
    Py_ssize_t ink = 0;
    for (vd_node *c = text_node_or_skip(first); c != NULL; c = text_node_or_skip(c->next)) {
        const unsigned char *p = c->content;
        if (p == NULL) continue;
        while (*p) {
            unsigned char b = *p;
            if (b < 0x80) {
                if (!ascii_space(b)) ink++;
                p++;
                continue;
            }
            Py_UCS4 cp;
            int width = utf8_next(p, &cp);
            if (width < 0) return -1;
            if (!Py_UNICODE_ISSPACE(cp)) ink++;
            p += width;
        }
    }
    return ink;
}

static int
is_link(const vd_node *el)
{
    return el->ns == NULL && el->name != NULL && strcmp((const char *)el->name, "a") == 0;
}

typedef struct {
    Py_ssize_t n; /* the element's characters so far */
    int in_link;  /* it or an ancestor is an <a> */
} InkFrame;

/* own_text_sizes(root, elements): visibility._own_text_len's size of root and of each of
 * the elements (0 for one not under root), from one walk: an element's characters outside
 * links, its text and its element children's with their tails; a comment's or a processing
 * instruction's tail is not read, as the Python walk skips them. */
static PyObject *
own_text_sizes(PyObject *self, PyObject *args)
{
    (void)self;
    vd_node *root;
    PyObject *elements;
    TLTable *want;
    int got = root_and_table(args, 1, &root, &elements, &want);
    if (got <= 0) {
        if (got < 0) return NULL;
        Py_RETURN_NONE;
    }
    InkFrame *frames = NULL;
    Py_ssize_t cap = 0, top = 0, root_size = 0;
    int fallback = 0;
    if (grow((void **)&frames, &cap, 1, sizeof(InkFrame)) < 0) goto fail;
    frames[0].in_link = is_link(root);
    frames[0].n = frames[0].in_link ? 0 : run_ink(root->children);
    if (frames[0].n < 0) goto python;
    vd_node *node = root, *next = next_element(root->children);
    for (;;) {
        if (next != NULL) { /* an element opens */
            if (grow((void **)&frames, &cap, top + 2, sizeof(InkFrame)) < 0) goto fail;
            InkFrame *f = &frames[++top];
            f->in_link = frames[top - 1].in_link || is_link(next);
            f->n = f->in_link ? 0 : run_ink(next->children);
            if (f->n < 0) goto python;
            node = next;
            next = next_element(node->children);
            continue;
        }
        /* node closes: its size is known, and joins its parent's with its tail */
        Py_ssize_t size = frames[top].n, slot = tl_find(want, node);
        if (slot >= 0) want->values[slot] = size;
        if (node == root) {
            root_size = size;
            break;
        }
        InkFrame *parent = &frames[--top];
        Py_ssize_t tail = parent->in_link ? 0 : run_ink(node->next);
        if (tail < 0) goto python;
        parent->n += size + tail;
        next = next_element(node->next);
        node = node->parent;
    }
    free(frames);
    PyObject *sizes = PyList_New(PyList_GET_SIZE(elements));
    if (sizes == NULL) {
        tl_table_free(want);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(elements); i++) {
        Py_ssize_t slot = tl_find(want, element_node(PyList_GET_ITEM(elements, i)));
        PyObject *v = PyLong_FromSsize_t(slot >= 0 ? want->values[slot] : 0);
        if (v == NULL) {
            Py_DECREF(sizes);
            tl_table_free(want);
            return NULL;
        }
        PyList_SET_ITEM(sizes, i, v);
    }
    tl_table_free(want);
    return Py_BuildValue("(nN)", root_size, sizes);
python:
    fallback = 1;
fail:
    free(frames);
    tl_table_free(want);
    if (fallback) Py_RETURN_NONE;
    return NULL;
}

/* outermost_of(root, elements): those of the elements below root that have no ancestor
 * among them below root, in document order (visdup.page.dom.outermost); None when one of
 * them is not an element. */
static PyObject *
outermost_of(PyObject *self, PyObject *args)
{
    (void)self;
    vd_node *root;
    PyObject *elements;
    TLTable *at;
    int got = root_and_table(args, 0, &root, &elements, &at);
    if (got <= 0) {
        if (got < 0) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *found = PyList_New(0);
    if (found == NULL) {
        tl_table_free(at);
        return NULL;
    }
    vd_node *cur = next_element(root->children);
    while (cur != NULL) {
        Py_ssize_t slot = tl_find(at, cur);
        if (slot >= 0) { /* wanted: its subtree is not entered */
            if (PyList_Append(found, PyList_GET_ITEM(elements, at->values[slot])) < 0) {
                Py_DECREF(found);
                tl_table_free(at);
                return NULL;
            }
        } else {
            vd_node *child = next_element(cur->children);
            if (child != NULL) {
                cur = child;
                continue;
            }
        }
        /* on to the next element in document order outside cur's subtree */
        while (cur != root) {
            vd_node *sibling = next_element(cur->next);
            if (sibling != NULL) {
                cur = sibling;
                break;
            }
            cur = cur->parent;
        }
        if (cur == root) break;
    }
    tl_table_free(at);
    return found;
}

static PyObject *
layout_walk(PyObject *self, PyObject *args)
{
    PyObject *start_obj, *root_label, *main_obj, *spine_obj, *skip, *main_label;
    int depth, stub_depth, end_stub, off_spine;
    Py_ssize_t budget;
    if (!PyArg_ParseTuple(args, "OUOOiiiinO!U", &start_obj, &root_label, &main_obj, &spine_obj,
                          &depth, &stub_depth, &end_stub, &off_spine, &budget, &PySet_Type,
                          &skip, &main_label))
        return NULL;
    vd_node *start = element_node(start_obj);
    if (start == NULL || start->type != N_ELEMENT) Py_RETURN_NONE;
    vd_node *main = element_node(main_obj);
    if (main_obj != Py_None && main == NULL) Py_RETURN_NONE;
    vd_node *spine[64];
    Py_ssize_t nspine = 0;
    if (spine_obj != Py_None) {
        if (!PyList_Check(spine_obj) || PyList_GET_SIZE(spine_obj) > 64) Py_RETURN_NONE;
        nspine = PyList_GET_SIZE(spine_obj);
        for (Py_ssize_t i = 0; i < nspine; i++) {
            spine[i] = element_node(PyList_GET_ITEM(spine_obj, i));
            if (spine[i] == NULL) Py_RETURN_NONE;
        }
    }
    Walk w = {0};
    w.tags = PyDict_New();
    if (w.tags == NULL) return NULL;
    PyObject *result = NULL;
    LFrame *stack = NULL;
    LPiece *pieces = NULL;
    LEntry *arena = NULL, *scratch = NULL;
    uint64_t *kinds = NULL;
    Py_ssize_t sp = 0, stack_cap = 0, npieces = 0, pieces_cap = 0, narena = 0, arena_cap = 0;
    Py_ssize_t scratch_cap = 0, kinds_cap = 0;
    if (grow((void **)&stack, &stack_cap, 1, sizeof(LFrame)) < 0) goto done;
    stack[0] = (LFrame){start, next_element(start->children), root_label, depth, -1, 0, 0, 0, 0};
    sp = 1;
    while (sp > 0) {
        LFrame *f = &stack[sp - 1];
        vd_node *child = NULL;
        PyObject *tag = NULL;
        if (f->left > 0 && f->stub != 0 && budget > 0) {
            while (f->child != NULL) {
                vd_node *c = f->child;
                f->child = next_element(c->next);
                tag = lower_tag(&w, c);
                if (tag == NULL) goto done; /* an error, or w.fallback */
                Py_DECREF(tag);             /* w.tags holds it */
                int skipped = PySet_Contains(skip, tag);
                if (skipped < 0) goto done;
                if (!skipped) {
                    child = c;
                    break;
                }
            }
        }
        if (child != NULL) {
            budget--;
            Py_ssize_t at = -1;
            for (Py_ssize_t i = 0; i < nspine; i++)
                if (spine[i] == child) {
                    at = i;
                    break;
                }
            LFrame next = {child, next_element(child->children), tag, f->left - 1, 0, 0, 0,
                           npieces, narena};
            if (at >= 0) {
                int at_end = at == nspine - 1;
                next.label = child == main ? main_label : tag;
                next.stub = at_end ? end_stub : -1;
                next.inside = 1;
                next.framed = !at_end;
            } else if (f->inside && f->stub < 0) { /* inside the region, beside its spine */
                next.stub = (off_spine > 1 ? off_spine : 1) - 1;
                next.inside = 1;
                next.framed = 1;
            } else if (f->stub < 0 && main != NULL && child == main) {
                next.label = main_label;
                next.stub = stub_depth;
                next.inside = 1;
            } else {
                next.stub = f->stub > 0 ? f->stub - 1 : f->stub;
                next.inside = f->inside;
                next.framed = f->framed;
            }
            if (grow((void **)&stack, &stack_cap, sp + 1, sizeof(LFrame)) < 0) goto done;
            stack[sp++] = next;
            continue;
        }
        /* f is done: its run is its own entry, then its kept children's runs */
        int distinct = nspine > 0 && f->stub >= 0;
        Py_hash_t lh = PyObject_Hash(f->label);
        if (lh == -1) goto done;
        uint64_t h = mix64((uint64_t)lh);
        Py_ssize_t len = 1, nkinds = 0;
        if (grow((void **)&scratch, &scratch_cap, 1, sizeof(LEntry)) < 0) goto done;
        scratch[0] = (LEntry){f->label, 1, f->framed};
        int have_last = 0;
        uint64_t last = 0;
        for (Py_ssize_t k = f->got_start; k < npieces; k++) {
            LPiece *p = &pieces[k];
            if (have_last && p->hash == last) continue;
            if (distinct) {
                int met = 0;
                for (Py_ssize_t q = 0; q < nkinds; q++)
                    if (kinds[q] == p->hash) {
                        met = 1;
                        break;
                    }
                if (met) continue;
                if (grow((void **)&kinds, &kinds_cap, nkinds + 1, sizeof(uint64_t)) < 0)
                    goto done;
                kinds[nkinds++] = p->hash;
            }
            last = p->hash;
            have_last = 1;
            if (grow((void **)&scratch, &scratch_cap, len + p->len, sizeof(LEntry)) < 0)
                goto done;
            memcpy(scratch + len, arena + p->at, sizeof(LEntry) * (size_t)p->len);
            len += p->len;
            h = mix64(h * 0xff51afd7ed558ccdULL ^ p->hash); /* not symmetric: a(b) is no b(a) */
        }
        scratch[0].size = len;
        Py_ssize_t base = f->arena_start;
        if (grow((void **)&arena, &arena_cap, base + len, sizeof(LEntry)) < 0) goto done;
        memcpy(arena + base, scratch, sizeof(LEntry) * (size_t)len);
        narena = base + len;
        npieces = f->got_start;
        if (grow((void **)&pieces, &pieces_cap, npieces + 1, sizeof(LPiece)) < 0) goto done;
        pieces[npieces++] = (LPiece){h, base, len};
        sp--;
    }
    {
        Py_ssize_t n = pieces[0].len;
        PyObject *labels = PyList_New(n), *sizes = PyList_New(n), *frames = PyList_New(n);
        if (labels == NULL || sizes == NULL || frames == NULL) {
            Py_XDECREF(labels);
            Py_XDECREF(sizes);
            Py_XDECREF(frames);
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            LEntry *e = &arena[pieces[0].at + i];
            PyObject *size = PyLong_FromSsize_t(e->size);
            if (size == NULL) {
                Py_DECREF(labels);
                Py_DECREF(sizes);
                Py_DECREF(frames);
                goto done;
            }
            Py_INCREF(e->label);
            PyList_SET_ITEM(labels, i, e->label);
            PyList_SET_ITEM(sizes, i, size);
            PyObject *framed = e->frame ? Py_True : Py_False;
            Py_INCREF(framed);
            PyList_SET_ITEM(frames, i, framed);
        }
        result = Py_BuildValue("(NNN)", labels, sizes, frames);
    }
done:
    if (result == NULL && w.fallback && !PyErr_Occurred()) {
        result = Py_None;
        Py_INCREF(result);
    }
    free(stack);
    free(pieces);
    free(arena);
    free(scratch);
    free(kinds);
    Py_XDECREF(w.tags);
    return result;
}

/* ------------------------------------------------------------------ element names
 *
 * element_names(root) is the loop of visdup.content.css._Index over ``root.iter()``, without
 * a proxy per element: each element's lower-cased tag, the names of its class attribute as
 * str.split() gives them and its id (when not empty), each with the element's number in
 * that iteration (the root 0; comments, processing instructions and entity references are
 * numbered as lxml yields them, and not indexed). The caller makes the proxies of the few
 * elements a page's rules select. None: an element the walk cannot read as lxml does (a
 * namespace, an attribute value that is not plain text, bytes that are not UTF-8).
 */

/* Appends number to the list under key in dict (made when absent); -1 on an error. */
static int
append_number(PyObject *dict, PyObject *key, PyObject *number)
{
    PyObject *list = PyDict_GetItemWithError(dict, key);
    if (list == NULL) {
        if (PyErr_Occurred()) return -1;
        list = PyList_New(0);
        if (list == NULL) return -1;
        int rc = PyDict_SetItem(dict, key, list);
        Py_DECREF(list);
        if (rc < 0) return -1;
    }
    return PyList_Append(list, number);
}

/* The class names of a class attribute's value (str.split()), cached by the value: a page
 * repeats a few hundred class attributes over thousands of elements. */
static PyObject *
class_names(PyObject *cache, PyObject *value)
{
    PyObject *names = PyDict_GetItemWithError(cache, value);
    if (names != NULL) {
        Py_INCREF(names);
        return names;
    }
    if (PyErr_Occurred()) return NULL;
    names = PyUnicode_Split(value, NULL, -1);
    if (names == NULL || PyDict_SetItem(cache, value, names) < 0) {
        Py_XDECREF(names);
        return NULL;
    }
    return names;
}

static int
index_element(vd_node *n, PyObject *number, PyObject *tags, PyObject *classes, PyObject *ids,
              PyObject *tag_cache, PyObject *class_cache, int *fallback)
{
    if (n->ns != NULL || n->name == NULL) {
        *fallback = 1;
        return -1;
    }
    PyObject *tag = lowered_tag(tag_cache, n, fallback);
    if (tag == NULL) return -1;
    int rc = append_number(tags, tag, number);
    Py_DECREF(tag);
    if (rc < 0) return -1;
    vd_attr *a = find_attr(n, "class");
    if (a != NULL) {
        PyObject *value = attr_text(a, fallback);
        if (value == NULL) return -1;
        PyObject *names = PyUnicode_GET_LENGTH(value) ? class_names(class_cache, value) : NULL;
        int failed = PyUnicode_GET_LENGTH(value) && names == NULL;
        Py_DECREF(value);
        if (failed) return -1;
        if (names != NULL) {
            for (Py_ssize_t k = 0; k < PyList_GET_SIZE(names) && !failed; k++)
                failed = append_number(classes, PyList_GET_ITEM(names, k), number) < 0;
            Py_DECREF(names);
            if (failed) return -1;
        }
    }
    a = find_attr(n, "id");
    if (a != NULL) {
        PyObject *value = attr_text(a, fallback);
        if (value == NULL) return -1;
        rc = PyUnicode_GET_LENGTH(value) ? append_number(ids, value, number) : 0;
        Py_DECREF(value);
        if (rc < 0) return -1;
    }
    return 0;
}

/* The nodes element_names numbered, for chain_match: each node by its number, with its
 * parent's number and the number of the element before it among its siblings (-1: none).
 * They are the tree's as it was: a caller holds the table only while the tree stays as it
 * is (a page's style rules are matched before anything is removed). */
typedef struct {
    Py_ssize_t n;
    vd_node **nodes;
    int32_t *parents, *prev;
} ElementTable;

static void
element_table_free(PyObject *capsule)
{
    ElementTable *t = PyCapsule_GetPointer(capsule, "visdup.element_table");
    if (t == NULL) return;
    PyMem_Free(t->nodes);
    PyMem_Free(t->parents);
    PyMem_Free(t->prev);
    PyMem_Free(t);
}

/* Grows the per-node arrays to `room` entries; 0 out of memory (the arrays as they were). */
static int
grow_nodes(Py_ssize_t room, vd_node ***nodes, int32_t **parents, int32_t **positions,
           int32_t **prev)
{
    vd_node **a = PyMem_Realloc(*nodes, sizeof(vd_node *) * (size_t)room);
    if (a == NULL) return 0;
    *nodes = a;
    int32_t **arrays[3] = {parents, positions, prev};
    for (int k = 0; k < 3; k++) {
        int32_t *grown = PyMem_Realloc(*arrays[k], sizeof(int32_t) * (size_t)room);
        if (grown == NULL) return 0;
        *arrays[k] = grown;
    }
    return 1;
}

static PyObject *
element_names(PyObject *self, PyObject *arg)
{
    (void)self;
    if (element_type == NULL || !PyObject_TypeCheck(arg, element_type)) Py_RETURN_NONE;
    vd_node *root = ((ElementHead *)arg)->c_node;
    if (root == NULL || root->type != N_ELEMENT) Py_RETURN_NONE;
    PyObject *tags = PyDict_New(), *classes = PyDict_New(), *ids = PyDict_New();
    PyObject *tag_cache = PyDict_New(), *class_cache = PyDict_New();
    PyObject *result = NULL;
    int fallback = 0;
    Py_ssize_t count = 0, sp = 0, cap = 64, n_nodes = 0, room = 1024;
    /* per open element: its number, the position of its next child, its last element child */
    Py_ssize_t *up = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)cap);
    Py_ssize_t *next_pos = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)cap);
    Py_ssize_t *last_el = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)cap);
    vd_node **nodes = PyMem_Malloc(sizeof(vd_node *) * (size_t)room);
    int32_t *parents = PyMem_Malloc(sizeof(int32_t) * (size_t)room);
    int32_t *positions = PyMem_Malloc(sizeof(int32_t) * (size_t)room);
    int32_t *prev = PyMem_Malloc(sizeof(int32_t) * (size_t)room);
    ElementTable *table = NULL;
    if (!tags || !classes || !ids || !tag_cache || !class_cache) goto done;
    if (!up || !next_pos || !last_el || !nodes || !parents || !positions || !prev) {
        PyErr_NoMemory();
        goto done;
    }
    vd_node *n = root;
    while (n != NULL) {
        if (n_nodes == room) {
            if (room >= INT32_MAX / 2) { /* past what the numbers hold: Python's loop */
                fallback = 1;
                goto done;
            }
            room *= 2;
            if (!grow_nodes(room, &nodes, &parents, &positions, &prev)) {
                PyErr_NoMemory();
                goto done;
            }
        }
        nodes[n_nodes] = n;
        parents[n_nodes] = sp ? (int32_t)up[sp - 1] : -1;
        positions[n_nodes] = sp ? (int32_t)next_pos[sp - 1]++ : 0;
        prev[n_nodes] = sp ? (int32_t)last_el[sp - 1] : -1;
        if (n->type == N_ELEMENT) {
            if (sp) last_el[sp - 1] = n_nodes;
            PyObject *at = PyLong_FromSsize_t(n_nodes);
            if (at == NULL) goto done;
            int rc = index_element(n, at, tags, classes, ids, tag_cache, class_cache, &fallback);
            Py_DECREF(at);
            if (rc < 0) goto done;
            count++;
        }
        /* root.iter()'s order: into an element's children, else on to the next node up */
        vd_node *child = n->type == N_ELEMENT ? lxml_child(n->children) : NULL;
        if (child != NULL) {
            if (sp == cap) {
                cap *= 2;
                Py_ssize_t *grown[3] = {
                    PyMem_Realloc(up, sizeof(Py_ssize_t) * (size_t)cap),
                    NULL, NULL};
                if (grown[0] != NULL) up = grown[0];
                grown[1] = grown[0] ? PyMem_Realloc(next_pos, sizeof(Py_ssize_t) * (size_t)cap) : NULL;
                if (grown[1] != NULL) next_pos = grown[1];
                grown[2] = grown[1] ? PyMem_Realloc(last_el, sizeof(Py_ssize_t) * (size_t)cap) : NULL;
                if (grown[2] != NULL) last_el = grown[2];
                if (grown[2] == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
            }
            up[sp] = n_nodes;
            next_pos[sp] = 0;
            last_el[sp++] = -1;
            n_nodes++;
            n = child;
            continue;
        }
        n_nodes++;
        vd_node *next = NULL;
        while (n != root && (next = lxml_child(n->next)) == NULL) {
            n = n->parent;
            sp--;
        }
        n = n == root ? NULL : next;
    }
    PyObject *p = PyBytes_FromStringAndSize((const char *)parents,
                                            n_nodes * (Py_ssize_t)sizeof(int32_t));
    PyObject *q = p ? PyBytes_FromStringAndSize((const char *)positions,
                                                n_nodes * (Py_ssize_t)sizeof(int32_t))
                    : NULL;
    table = q ? PyMem_Malloc(sizeof(ElementTable)) : NULL;
    PyObject *capsule = NULL;
    if (table != NULL) {
        *table = (ElementTable){n_nodes, nodes, parents, prev};
        nodes = NULL, parents = NULL, prev = NULL; /* the table's now */
        capsule = PyCapsule_New(table, "visdup.element_table", element_table_free);
        if (capsule == NULL) {
            PyMem_Free(table->nodes);
            PyMem_Free(table->parents);
            PyMem_Free(table->prev);
            PyMem_Free(table);
        }
    } else if (q != NULL) {
        PyErr_NoMemory();
    }
    if (capsule != NULL)
        result = Py_BuildValue("(OOOnOON)", tags, classes, ids, count, p, q, capsule);
    Py_XDECREF(p);
    Py_XDECREF(q);
done:
    PyMem_Free(up);
    PyMem_Free(next_pos);
    PyMem_Free(last_el);
    PyMem_Free(nodes);
    PyMem_Free(parents);
    PyMem_Free(positions);
    PyMem_Free(prev);
    Py_XDECREF(tags);
    Py_XDECREF(classes);
    Py_XDECREF(ids);
    Py_XDECREF(tag_cache);
    Py_XDECREF(class_cache);
    if (result == NULL && fallback && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

/* ------------------------------------------------------------------ selector chains
 *
 * chain_match(table, compounds, combinators, pool, budget) is visdup.content.selectors'
 * Chain.matches over the elements numbered in ``pool`` (a selector's candidates, document
 * order, repeats skipped), on the nodes element_names numbered: the numbers of those that
 * match, each compound tested as Compound.test tests it and the combinators walked as
 * Chain._left walks them, with the same memos. None: more steps than ``budget`` (XPath
 * answers), or an attribute value that is not plain text.
 */
enum { OP_EXISTS, OP_EQUALS, OP_PREFIX, OP_SUFFIX, OP_CONTAINS, OP_WORD, OP_DASH };

typedef struct {
    const char *tag; /* NULL: any */
    Py_ssize_t nids, nclasses, nattrs;
    const char **ids, **classes, **attr_names, **wants;
    int *ops;
    int never;
} CCompound;

typedef struct {
    const ElementTable *t;
    CCompound *compounds;
    const char *combinators;
    Py_ssize_t ncompounds, left; /* left: steps before XPath answers (-1: no limit) */
    unsigned char *known, *along; /* per (node, compound): 0 unknown, 1 no, 2 yes */
    int failed;                  /* 1: steps ran out or a value is unreadable */
} Chain;

static int
xml_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Whether `want` is one of the names of `value` split at XPath's whitespace. */
static int
has_word(const char *value, const char *want)
{
    size_t wl = strlen(want);
    const char *p = value;
    while (*p) {
        while (*p && xml_space(*p)) p++;
        const char *start = p;
        while (*p && !xml_space(*p)) p++;
        if ((size_t)(p - start) == wl && memcmp(start, want, wl) == 0) return 1;
    }
    return 0;
}

/* An attribute's value as lxml's get() reads it: NULL when absent (*failed set when it is
 * not plain text). */
static const char *
chain_attr(vd_node *el, const char *name, int *failed)
{
    int simple = 1;
    const char *value = raw_or_absent(el, name, &simple);
    if (!simple) *failed = 1;
    return value;
}

static int
compound_test(Chain *ch, const CCompound *c, vd_node *el)
{
    if (c->never || el->type != N_ELEMENT) return 0;
    if (c->tag != NULL && strcmp((const char *)el->name, c->tag) != 0) return 0;
    for (Py_ssize_t k = 0; k < c->nids; k++) {
        const char *v = chain_attr(el, "id", &ch->failed);
        if (v == NULL || strcmp(v, c->ids[k]) != 0) return 0;
    }
    if (c->nclasses) {
        const char *v = chain_attr(el, "class", &ch->failed);
        if (v == NULL) return 0;
        for (Py_ssize_t k = 0; k < c->nclasses; k++)
            if (!has_word(v, c->classes[k])) return 0;
    }
    for (Py_ssize_t k = 0; k < c->nattrs; k++) {
        const char *v = chain_attr(el, c->attr_names[k], &ch->failed);
        if (v == NULL) return 0;
        const char *w = c->wants[k];
        size_t vl = strlen(v), wl = strlen(w);
        int holds = 0;
        switch (c->ops[k]) {
        case OP_EXISTS: holds = 1; break;
        case OP_EQUALS: holds = strcmp(v, w) == 0; break;
        case OP_PREFIX: holds = vl >= wl && memcmp(v, w, wl) == 0; break;
        case OP_SUFFIX: holds = vl >= wl && memcmp(v + vl - wl, w, wl) == 0; break;
        case OP_CONTAINS: holds = strstr(v, w) != NULL; break;
        case OP_WORD: holds = has_word(v, w); break;
        case OP_DASH: holds = strcmp(v, w) == 0 || (vl > wl && memcmp(v, w, wl) == 0 && v[wl] == '-'); break;
        }
        if (!holds) return 0;
    }
    return 1;
}

static int chain_left(Chain *ch, Py_ssize_t el, Py_ssize_t i);

/* Whether node `other` matches compounds[i + 1] and those left of it. */
static int
chain_here(Chain *ch, Py_ssize_t other, Py_ssize_t i)
{
    if (ch->left > 0 && --ch->left == 0) {
        ch->failed = 1;
        return 0;
    }
    return compound_test(ch, &ch->compounds[i + 1], ch->t->nodes[other]) && !ch->failed &&
           chain_left(ch, other, i + 1);
}

/* Whether `node` or one after it (its ancestors up to the top when `up`, else its earlier
 * element siblings) matches compounds[i + 1] and those left of it. */
static int
chain_along(Chain *ch, Py_ssize_t node, Py_ssize_t i, int up)
{
    const ElementTable *t = ch->t;
    Py_ssize_t first = node;
    int got = 0;
    while (node >= 0) {
        unsigned char seen = ch->along[node * ch->ncompounds + i];
        if (seen) {
            got = seen == 2;
            break;
        }
        if (chain_here(ch, node, i)) {
            got = 1;
            break;
        }
        if (ch->failed) return 0;
        if (node == 0 && up) break; /* the top */
        node = up ? t->parents[node] : t->prev[node];
    }
    /* each node passed has that answer: the search went through it */
    for (Py_ssize_t at = first; at >= 0 && at != node; at = up ? t->parents[at] : t->prev[at])
        ch->along[at * ch->ncompounds + i] = (unsigned char)(got ? 2 : 1);
    if (node >= 0) ch->along[node * ch->ncompounds + i] = (unsigned char)(got ? 2 : 1);
    return got;
}

static int
chain_left(Chain *ch, Py_ssize_t el, Py_ssize_t i)
{
    if (i + 1 == ch->ncompounds) return 1;
    unsigned char *memo = &ch->known[el * ch->ncompounds + i];
    if (*memo) return *memo == 2;
    int got = 0;
    if (el != 0) { /* not the top */
        const ElementTable *t = ch->t;
        switch (ch->combinators[i]) {
        case '>': got = t->parents[el] >= 0 && chain_here(ch, t->parents[el], i); break;
        case '+': got = t->prev[el] >= 0 && chain_here(ch, t->prev[el], i); break;
        case ' ': got = chain_along(ch, t->parents[el], i, 1); break;
        default: got = chain_along(ch, t->prev[el], i, 0); break; /* '~' */
        }
    }
    if (ch->failed) return 0;
    *memo = (unsigned char)(got ? 2 : 1);
    return got;
}

/* The strings of a tuple of bytes into `out` (borrowed while the tuple lives); -1 when an
 * item is no bytes. */
static int
byte_strings(PyObject *tuple, const char **out)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(tuple); k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if (!PyBytes_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "chain_match: names are bytes");
            return -1;
        }
        out[k] = PyBytes_AS_STRING(item);
    }
    return 0;
}

static PyObject *
chain_match(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *compounds, *pool;
    const char *combinators;
    Py_ssize_t ncomb, budget;
    if (!PyArg_ParseTuple(args, "OO!y#O!n", &capsule, &PyTuple_Type, &compounds, &combinators,
                          &ncomb, &PyList_Type, &pool, &budget))
        return NULL;
    ElementTable *t = PyCapsule_GetPointer(capsule, "visdup.element_table");
    if (t == NULL) return NULL;
    Py_ssize_t nc = PyTuple_GET_SIZE(compounds);
    if (nc < 1 || ncomb != nc - 1) {
        PyErr_SetString(PyExc_ValueError, "chain_match: one combinator between two compounds");
        return NULL;
    }
    Chain ch = {t, NULL, combinators, nc, budget > 0 ? budget : -1, NULL, NULL, 0};
    PyObject *result = NULL;
    unsigned char *seen = NULL;
    Py_ssize_t strings = 0;
    for (Py_ssize_t k = 0; k < nc; k++) {
        PyObject *c = PyTuple_GET_ITEM(compounds, k);
        if (!PyTuple_Check(c) || PyTuple_GET_SIZE(c) != 7) {
            PyErr_SetString(PyExc_TypeError, "chain_match: a compound is a 7-tuple");
            return NULL;
        }
        strings += PyTuple_GET_SIZE(PyTuple_GET_ITEM(c, 1)) + PyTuple_GET_SIZE(PyTuple_GET_ITEM(c, 2)) +
                   2 * PyTuple_GET_SIZE(PyTuple_GET_ITEM(c, 3));
    }
    ch.compounds = PyMem_Calloc((size_t)nc, sizeof(CCompound));
    const char **pointers = PyMem_Calloc((size_t)strings + 1, sizeof(char *));
    int *ops = PyMem_Calloc((size_t)strings + 1, sizeof(int));
    ch.known = PyMem_Calloc((size_t)(t->n * nc) + 1, 1);
    ch.along = PyMem_Calloc((size_t)(t->n * nc) + 1, 1);
    seen = PyMem_Calloc((size_t)t->n + 1, 1);
    if (!ch.compounds || !pointers || !ops || !ch.known || !ch.along || !seen) {
        PyErr_NoMemory();
        goto done;
    }
    /* each compound: (tag or None, ids, classes, attribute names, ops, wants, never) */
    const char **at = pointers;
    int *op_at = ops;
    for (Py_ssize_t k = 0; k < nc; k++) {
        PyObject *c = PyTuple_GET_ITEM(compounds, k);
        CCompound *cc = &ch.compounds[k];
        PyObject *tag = PyTuple_GET_ITEM(c, 0);
        PyObject *parts[3] = {PyTuple_GET_ITEM(c, 1), PyTuple_GET_ITEM(c, 2), PyTuple_GET_ITEM(c, 3)};
        PyObject *op_list = PyTuple_GET_ITEM(c, 4), *wants = PyTuple_GET_ITEM(c, 5);
        if (!(tag == Py_None || PyBytes_Check(tag)) || !PyTuple_Check(parts[0]) ||
            !PyTuple_Check(parts[1]) || !PyTuple_Check(parts[2]) || !PyTuple_Check(op_list) ||
            !PyTuple_Check(wants) || PyTuple_GET_SIZE(op_list) != PyTuple_GET_SIZE(parts[2]) ||
            PyTuple_GET_SIZE(wants) != PyTuple_GET_SIZE(parts[2])) {
            PyErr_SetString(PyExc_TypeError, "chain_match: a malformed compound");
            goto done;
        }
        cc->tag = tag == Py_None ? NULL : PyBytes_AS_STRING(tag);
        cc->nids = PyTuple_GET_SIZE(parts[0]);
        cc->ids = at;
        if (byte_strings(parts[0], at) < 0) goto done;
        at += cc->nids;
        cc->nclasses = PyTuple_GET_SIZE(parts[1]);
        cc->classes = at;
        if (byte_strings(parts[1], at) < 0) goto done;
        at += cc->nclasses;
        cc->nattrs = PyTuple_GET_SIZE(parts[2]);
        cc->attr_names = at;
        if (byte_strings(parts[2], at) < 0) goto done;
        at += cc->nattrs;
        cc->wants = at;
        if (byte_strings(wants, at) < 0) goto done;
        at += cc->nattrs;
        cc->ops = op_at;
        for (Py_ssize_t j = 0; j < cc->nattrs; j++) {
            long op = PyLong_AsLong(PyTuple_GET_ITEM(op_list, j));
            if (op < OP_EXISTS || op > OP_DASH) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "chain_match: an op");
                goto done;
            }
            op_at[j] = (int)op;
        }
        op_at += cc->nattrs;
        cc->never = PyObject_IsTrue(PyTuple_GET_ITEM(c, 6));
        if (cc->never < 0) goto done;
    }
    PyObject *found = PyList_New(0);
    if (found == NULL) goto done;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(pool); k++) {
        Py_ssize_t el = PyLong_AsSsize_t(PyList_GET_ITEM(pool, k));
        if (el < 0 || el >= t->n) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "chain_match: a number");
            Py_DECREF(found);
            goto done;
        }
        if (seen[el]) continue;
        seen[el] = 1;
        int match = compound_test(&ch, &ch.compounds[0], t->nodes[el]) && !ch.failed &&
                    chain_left(&ch, el, 0);
        if (ch.failed) {
            Py_DECREF(found);
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
        if (match && PyList_Append(found, PyList_GET_ITEM(pool, k)) < 0) {
            Py_DECREF(found);
            goto done;
        }
    }
    result = found;
done:
    PyMem_Free(ch.compounds);
    PyMem_Free(pointers);
    PyMem_Free(ops);
    PyMem_Free(ch.known);
    PyMem_Free(ch.along);
    PyMem_Free(seen);
    return result;
}

static PyMethodDef methods[] = {
    {"blocks_walk", blocks_walk, METH_VARARGS,
     "blocks_walk(root, block_tags, headings, elements=True, rows=False, factor=None,\n"
     "known=None)\n"
     "([(owner, heading, level, text, link_chars, chars)], parents, {element: (first, end,\n"
     "free)}, [(tag, class, id, role, itemprop)], child positions) of visdup.denoise's\n"
     "first walk, or None for the Python walk; with elements false, all but the paragraphs\n"
     "stay empty. With rows: the paragraphs as (kind, level, text), the spans as int64\n"
     "quads (element, first, end, free), factor(key) of each element as doubles (from the\n"
     "dict known when it holds the key) and (owner, link_chars, chars) as int64 triples."},
    {"invisible_scan", invisible_scan, METH_VARARGS,
     "invisible_scan(root, never_tags, names=None)\n"
     "([path of each outermost never-rendered element], [(style text, media)],\n"
     "[(path, inline style)]) for visdup.denoise.remove_invisible, or None for Python;\n"
     "with names (a tuple), also [path of each element root.iter(*names) yields]."},
    {"links_walk", links_walk, METH_VARARGS,
     "links_walk(root, cap)\n"
     "(hrefs, total) of visdup.page.links.read_links: the first cap non-blank hrefs of the\n"
     "a and area elements (0: all); total -1 when no other one follows, else the elements\n"
     "with an href in the document (-2: for XPath to count); None for Python."},
    {"dom_walk", dom_walk, METH_VARARGS,
     "dom_walk(root, skip_tags, text_label, classes, text, max_nodes)\n"
     "(labels, texts, hints, parents, truncated) of visdup.stm.dom_tree, or None when the\n"
     "Python walk must do it."},
    {"text_length", text_length, METH_O,
     "text_length(element)\n"
     "string-length(normalize-space(.)) of an lxml element, or -1 for XPath to answer."},
    {"text_lengths", text_lengths, METH_O,
     "text_lengths(root)\n"
     "A table of text_length for every element under root, from one walk (a capsule for\n"
     "text_length_of), or None for text_length to answer each."},
    {"text_length_of", text_length_of, METH_VARARGS,
     "text_length_of(table, element)\n"
     "The element's text_length from the table; -1: XPath must answer; -2: not in it."},
    {"layout_walk", layout_walk, METH_VARARGS,
     "layout_walk(start, root_label, main, spine, depth, stub_depth, end_stub, off_spine,\n"
     "budget, skip_tags, main_label)\n"
     "(labels, sizes, frames) of visdup.templates.signature.layout_signature's walk by tag,\n"
     "before its node cap, or None when the Python walk must do it."},
    {"own_text_sizes", own_text_sizes, METH_VARARGS,
     "own_text_sizes(root, elements)\n"
     "(root's size, [each element's size]) of visdup.content.visibility._own_text_len:\n"
     "visible characters outside links; None for the Python walk."},
    {"outermost_of", outermost_of, METH_VARARGS,
     "outermost_of(root, elements)\n"
     "The elements below root with no ancestor among them below root, in document order\n"
     "(visdup.page.dom.outermost); None for the Python walk."},
    {"element_names", element_names, METH_O,
     "element_names(root)\n"
     "(tags, classes, ids, elements, parents, positions, table) of visdup.content.css._Index\n"
     "over root.iter(): each name with the numbers of its elements in that iteration, each\n"
     "node's parent number and child position (int32 bytes), and the nodes for chain_match\n"
     "(valid while the tree stays as it is); None for the Python loop."},
    {"chain_match", chain_match, METH_VARARGS,
     "chain_match(table, compounds, combinators, pool, budget)\n"
     "The numbers in pool (element_names' table) that a selector chain matches, as\n"
     "visdup.content.selectors.Chain.matches matches them; None: XPath must answer."},
    {"subtree_sizes", subtree_sizes, METH_O,
     "subtree_sizes(parents)\n"
     "Every node's subtree size from preorder parent indices (the root's is -1)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dom",
                                    "Compiled walks over lxml's trees.", -1, methods, NULL,
                                    NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__dom(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
#ifdef PYPY_VERSION
    int walk = 0; /* the walks read CPython object layouts */
#else
    int walk = probe_layout();
#endif
    if (PyModule_AddIntConstant(m, "DOM_WALK", walk) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
