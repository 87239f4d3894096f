/*
 * Visual terms, compiled: translation of an lxml tree and compression of a marked term.
 *
 * These are exact ports of visdup.term.translate_python and compress_python (the
 * reference implementations); the tests compare both on real pages and random terms.
 *
 * translate walks libxml2's tree in place. It reads the xmlNode behind an lxml element
 * through the layout of lxml's public `etree.h` (PyObject_HEAD, _doc, _c_node) and the
 * struct fields of libxml2's `tree.h`; it calls no libxml2 function, so the module does
 * not link against the libxml2 copy bundled inside lxml. A probe at import checks that
 * layout on a freshly built tree and refuses to load (ImportError) when it differs, so
 * callers fall back to Python instead of reading garbage. The GIL stays held during the
 * walk: the tree belongs to lxml objects that other threads may change under the GIL.
 *
 * compress converts the flat preorder arrays into a linked tree (first child / next
 * sibling) and then runs without the GIL: vrt folds chain links in place, hrz hashes
 * shapes bottom-up and joins runs of equal-shape siblings in place (the joined subtree
 * keeps the left one's nodes with new marks). Both walk with explicit stacks: trees can
 * be thousands of levels deep.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/tree.h>
#include <libxml/xmlversion.h>

#ifdef PYPY_VERSION
#error "visdup._term reads CPython object layouts; PyPy uses the Python fallback"
#endif

enum { GRP = 0, ROW = 1, COL = 2, TEXT = 3, NEVER = -1 };

/* lxml's element object, as the walks of _dom read it: its c_node is an xmlNode here. */
#include "_lxml_tree.h"

static PyTypeObject *element_type = NULL; /* lxml.etree._Element */

/* ------------------------------------------------------------------ growable arrays */

typedef struct {
    void *data;
    size_t len;
    size_t cap;
    size_t item;
} Vec;

static void
vec_init(Vec *v, size_t item)
{
    v->data = NULL;
    v->len = v->cap = 0;
    v->item = item;
}

static void
vec_free(Vec *v)
{
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

/* Makes room for `extra` more items; 0 on allocation failure. */
static int
vec_reserve(Vec *v, size_t extra)
{
    if (v->len + extra <= v->cap) {
        return 1;
    }
    size_t cap = v->cap ? v->cap : 64;
    while (cap < v->len + extra) {
        if (cap > SIZE_MAX / 2 / v->item) {
            return 0;
        }
        cap *= 2;
    }
    void *data = realloc(v->data, cap * v->item);
    if (data == NULL) {
        return 0;
    }
    v->data = data;
    v->cap = cap;
    return 1;
}

#define VEC_AT(v, type, i) (((type *)(v).data)[i])

/* ------------------------------------------------------------------ text helpers */

/* Decodes one UTF-8 code point at s (NUL-terminated); advances *len; U+FFFD when invalid. */
static uint32_t
utf8_next(const unsigned char *s, size_t *len)
{
    unsigned char c = s[0];
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    int need;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
        need = 1;
        cp = c & 0x1F;
    }
    else if ((c & 0xF0) == 0xE0) {
        need = 2;
        cp = c & 0x0F;
    }
    else if ((c & 0xF8) == 0xF0) {
        need = 3;
        cp = c & 0x07;
    }
    else {
        *len = 1;
        return 0xFFFD;
    }
    for (int k = 1; k <= need; k++) {
        if ((s[k] & 0xC0) != 0x80) {
            *len = (size_t)k;
            return 0xFFFD;
        }
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    *len = (size_t)need + 1;
    return cp;
}

/* Python's str.isspace() (and re's \s), which str.strip() removes. */
static int
is_py_space(uint32_t cp)
{
    if (cp < 0x80) {
        return (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x20);
    }
    switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
        return 1;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

/* 1 when the UTF-8 string holds a character that str.strip() keeps. */
static int
has_ink(const xmlChar *text)
{
    const unsigned char *s = (const unsigned char *)text;
    if (s == NULL) {
        return 0;
    }
    while (*s) {
        if (*s < 0x80) {
            if (!is_py_space(*s)) {
                return 1;
            }
            s++;
            continue;
        }
        size_t len;
        uint32_t cp = utf8_next(s, &len);
        if (!is_py_space(cp)) {
            return 1;
        }
        s += len;
    }
    return 0;
}

/* lxml's _textNodeOrSkip: the text node at c (XInclude markers skipped), else NULL. */
static xmlNode *
text_or_skip(xmlNode *c)
{
    while (c != NULL) {
        if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
            return c;
        }
        if (c->type != XML_XINCLUDE_START && c->type != XML_XINCLUDE_END) {
            return NULL;
        }
        c = c->next;
    }
    return NULL;
}

/* `s and s.strip()` for an element's .text (first = children) or .tail (first = next). */
static int
text_has_ink(xmlNode *first)
{
    for (xmlNode *t = text_or_skip(first); t != NULL; t = text_or_skip(t->next)) {
        if (has_ink(t->content)) {
            return 1;
        }
    }
    return 0;
}

/* The nodes iterwalk visits: elements and entity references (comments and PIs are not). */
static xmlNode *
walkable(xmlNode *c)
{
    while (c != NULL && c->type != XML_ELEMENT_NODE && c->type != XML_ENTITY_REF_NODE) {
        c = c->next;
    }
    return c;
}

/* ------------------------------------------------------------------ hidden elements */

/* re.IGNORECASE folding of the characters the hidden-style pattern uses. */
static uint32_t
fold(uint32_t cp)
{
    if (cp >= 'A' && cp <= 'Z') {
        return cp + 32;
    }
    if (cp == 0x130 || cp == 0x131) {
        return 'i';
    }
    if (cp == 0x17F) {
        return 's';
    }
    if (cp == 0x212A) {
        return 'k';
    }
    return cp;
}

/* Matches word, \s*, ':', \s*, value at cps[i]; the pattern's characters are lower ASCII. */
static int
match_decl(const uint32_t *cps, size_t n, size_t i, const char *word, const char *value)
{
    for (const char *w = word; *w; w++, i++) {
        if (i >= n || fold(cps[i]) != (uint32_t)*w) {
            return 0;
        }
    }
    while (i < n && is_py_space(cps[i])) {
        i++;
    }
    if (i >= n || cps[i] != ':') {
        return 0;
    }
    i++;
    while (i < n && is_py_space(cps[i])) {
        i++;
    }
    for (const char *w = value; *w; w++, i++) {
        if (i >= n || fold(cps[i]) != (uint32_t)*w) {
            return 0;
        }
    }
    return 1;
}

/* _HIDDEN_STYLE.search(style): display\s*:\s*none|visibility\s*:\s*hidden, ignoring case. */
static int
style_hides(const unsigned char *s, size_t nbytes)
{
    uint32_t local[256];
    uint32_t *cps = nbytes <= 256 ? local : malloc(nbytes * sizeof(uint32_t));
    if (cps == NULL) {
        return -1;
    }
    size_t n = 0;
    for (size_t pos = 0; pos < nbytes;) {
        size_t len;
        cps[n++] = utf8_next(s + pos, &len);
        pos += len;
    }
    int found = 0;
    for (size_t i = 0; i < n && !found; i++) {
        uint32_t c = fold(cps[i]);
        if (c == 'd') {
            found = match_decl(cps, n, i, "display", "none");
        }
        else if (c == 'v') {
            found = match_decl(cps, n, i, "visibility", "hidden");
        }
    }
    if (cps != local) {
        free(cps);
    }
    return found;
}

/* The value libxml2's xmlGetNsProp gives an attribute: its text children, joined. */
static unsigned char *
attr_value(xmlAttr *a, size_t *len, int *owned)
{
    xmlNode *c = a->children;
    *owned = 0;
    if (c == NULL) {
        *len = 0;
        return (unsigned char *)"";
    }
    if (c->next == NULL) {
        const char *s = c->content ? (const char *)c->content : "";
        *len = strlen(s);
        return (unsigned char *)s;
    }
    size_t total = 0;
    for (xmlNode *t = c; t != NULL; t = t->next) {
        if ((t->type == XML_TEXT_NODE || t->type == XML_CDATA_SECTION_NODE) && t->content) {
            total += strlen((const char *)t->content);
        }
    }
    unsigned char *buf = malloc(total + 1);
    if (buf == NULL) {
        return NULL;
    }
    size_t at = 0;
    for (xmlNode *t = c; t != NULL; t = t->next) {
        if ((t->type == XML_TEXT_NODE || t->type == XML_CDATA_SECTION_NODE) && t->content) {
            size_t k = strlen((const char *)t->content);
            memcpy(buf + at, t->content, k);
            at += k;
        }
    }
    buf[at] = '\0';
    *len = at;
    *owned = 1;
    return buf;
}

/* term._hidden: the hidden attribute, <input type=hidden>, or an inline style that hides. */
static int
is_hidden(xmlNode *node, int is_input)
{
    int seen_type = 0, seen_style = 0;
    for (xmlAttr *a = node->properties; a != NULL; a = a->next) {
        if (a->ns != NULL || a->name == NULL) {
            continue;
        }
        const char *name = (const char *)a->name;
        if (strcmp(name, "hidden") == 0) {
            return 1;
        }
        int want_type = is_input && !seen_type && strcmp(name, "type") == 0;
        int want_style = !seen_style && strcmp(name, "style") == 0;
        if (!want_type && !want_style) {
            continue;
        }
        size_t len;
        int owned;
        unsigned char *value = attr_value(a, &len, &owned);
        if (value == NULL) {
            return -1;
        }
        int hidden = 0;
        if (want_type) {
            seen_type = 1;
            hidden = len == 6 && PyOS_strnicmp((const char *)value, "hidden", 6) == 0;
        }
        else {
            seen_style = 1;
            hidden = style_hides(value, len);
        }
        if (owned) {
            free(value);
        }
        if (hidden) {
            return hidden;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ tag classification */

/* What a tag means, cached per (interned name, namespace) pointer pair for one walk. */
typedef struct {
    const xmlChar *name;
    const xmlNs *ns;
    signed char cls;
    unsigned char replaced;
    unsigned char input;
    unsigned char used;
} TagInfo;

typedef struct {
    TagInfo *slots;
    size_t cap; /* a power of two */
    size_t count;
    PyObject *classes;
    PyObject *replaced;
} TagCache;

static size_t
tag_hash(const xmlChar *name, const xmlNs *ns)
{
    uintptr_t h = (uintptr_t)name * (uintptr_t)0x9E3779B97F4A7C15ULL;
    h ^= (uintptr_t)ns * (uintptr_t)0xC2B2AE3D27D4EB4FULL;
    return (size_t)(h ^ (h >> 29));
}

/* lxml's tag string: "{href}name" for a namespaced node, else the name. */
static PyObject *
tag_string(const xmlNode *node)
{
    if (node->ns != NULL && node->ns->href != NULL) {
        return PyUnicode_FromFormat("{%s}%s", (const char *)node->ns->href,
                                    (const char *)node->name);
    }
    return PyUnicode_FromString((const char *)node->name);
}

/* A class code from the classes mapping's value: an int in -1..3 (None means -1). */
static int
class_code(PyObject *value, int *code)
{
    if (value == Py_None) {
        *code = NEVER;
        return 0;
    }
    long v = PyLong_AsLong(value);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v < -1 || v > 3) {
        PyErr_Format(PyExc_ValueError, "visual class code must be -1..3, not %ld", v);
        return -1;
    }
    *code = (int)v;
    return 0;
}

/* classes.get(tag, TEXT) as a code; -2 with an exception set on failure. */
static int
lookup_class(PyObject *classes, PyObject *tag)
{
    PyObject *value = PyDict_GetItemWithError(classes, tag);
    if (value == NULL) {
        return PyErr_Occurred() ? -2 : TEXT;
    }
    int code;
    return class_code(value, &code) < 0 ? -2 : code;
}

static int
tag_cache_grow(TagCache *tc)
{
    size_t cap = tc->cap ? tc->cap * 2 : 64;
    TagInfo *slots = calloc(cap, sizeof(TagInfo));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < tc->cap; i++) {
        if (tc->slots[i].used) {
            size_t j = tag_hash(tc->slots[i].name, tc->slots[i].ns) & (cap - 1);
            while (slots[j].used) {
                j = (j + 1) & (cap - 1);
            }
            slots[j] = tc->slots[i];
        }
    }
    free(tc->slots);
    tc->slots = slots;
    tc->cap = cap;
    return 0;
}

/* The cached facts of node's tag, computed through Python on first sight; NULL on error. */
static const TagInfo *
tag_info(TagCache *tc, const xmlNode *node)
{
    if (tc->cap == 0 || (tc->count + 1) * 2 > tc->cap) {
        if (tag_cache_grow(tc) < 0) {
            return NULL;
        }
    }
    size_t j = tag_hash(node->name, node->ns) & (tc->cap - 1);
    while (tc->slots[j].used) {
        if (tc->slots[j].name == node->name && tc->slots[j].ns == node->ns) {
            return &tc->slots[j];
        }
        j = (j + 1) & (tc->cap - 1);
    }
    if (node->name == NULL) {
        PyErr_SetString(PyExc_ValueError, "element without a name");
        return NULL;
    }
    PyObject *tag = tag_string(node);
    if (tag == NULL) {
        return NULL;
    }
    PyObject *lower = PyObject_CallMethod(tag, "lower", NULL);
    Py_DECREF(tag);
    if (lower == NULL) {
        return NULL;
    }
    int cls = lookup_class(tc->classes, lower);
    int replaced = cls == -2 ? -1 : PySequence_Contains(tc->replaced, lower);
    Py_DECREF(lower);
    if (cls == -2 || replaced < 0) {
        return NULL;
    }
    TagInfo *info = &tc->slots[j];
    info->name = node->name;
    info->ns = node->ns;
    info->cls = (signed char)cls;
    info->replaced = (unsigned char)replaced;
    info->input = (node->ns == NULL || node->ns->href == NULL) &&
                  strcmp((const char *)node->name, "input") == 0;
    info->used = 1;
    tc->count++;
    return info;
}

/* ------------------------------------------------------------------ translate */

typedef struct {
    Vec labels;     /* uint8 per output node, preorder */
    Vec sizes;      /* Py_ssize_t per output node */
    Vec containers; /* Py_ssize_t: open container node indexes */
    Vec in_run;     /* uint8 per open container: inside a run of inline content */
    Vec opened;     /* uint8 per walked depth: the element opened a container */
} Builder;

static int
emit(Builder *b, int label)
{
    if (!vec_reserve(&b->labels, 1) || !vec_reserve(&b->sizes, 1)) {
        return -1;
    }
    VEC_AT(b->labels, uint8_t, b->labels.len++) = (uint8_t)label;
    VEC_AT(b->sizes, Py_ssize_t, b->sizes.len++) = 1;
    return 0;
}

static int
add_text(Builder *b)
{
    uint8_t *run = &VEC_AT(b->in_run, uint8_t, b->in_run.len - 1);
    if (*run) {
        return 0;
    }
    *run = 1;
    return emit(b, TEXT);
}

static int
open_container(Builder *b, int label)
{
    Py_ssize_t index = (Py_ssize_t)b->labels.len;
    if (emit(b, label) < 0 || !vec_reserve(&b->containers, 1) || !vec_reserve(&b->in_run, 1)) {
        return -1;
    }
    VEC_AT(b->in_run, uint8_t, b->in_run.len - 1) = 0; /* the parent's run ends */
    VEC_AT(b->containers, Py_ssize_t, b->containers.len++) = index;
    VEC_AT(b->in_run, uint8_t, b->in_run.len++) = 0;
    return 0;
}

static void
close_container(Builder *b)
{
    Py_ssize_t index = VEC_AT(b->containers, Py_ssize_t, --b->containers.len);
    VEC_AT(b->sizes, Py_ssize_t, index) = (Py_ssize_t)b->labels.len - index;
    b->in_run.len--;
    VEC_AT(b->in_run, uint8_t, b->in_run.len - 1) = 0;
}

static void
builder_free(Builder *b)
{
    vec_free(&b->labels);
    vec_free(&b->sizes);
    vec_free(&b->containers);
    vec_free(&b->in_run);
    vec_free(&b->opened);
}

/* The 'start' event of translate_python; *skip says whether to leave the subtree out. */
static int
walk_start(Builder *b, TagCache *tc, xmlNode *node, xmlNode *root, int *skip)
{
    int opened = 0;
    *skip = 0;
    if (node->type != XML_ELEMENT_NODE) {
        *skip = 1;
    }
    else if (node == root) {
        if (text_has_ink(node->children) && add_text(b) < 0) {
            return -1;
        }
    }
    else {
        const TagInfo *info = tag_info(tc, node);
        if (info == NULL) {
            return -1;
        }
        int hidden = 0;
        if (info->cls != NEVER) {
            hidden = is_hidden(node, info->input);
            if (hidden < 0) {
                PyErr_NoMemory();
                return -1;
            }
        }
        if (info->cls == NEVER || hidden) {
            *skip = 1;
        }
        else if (info->cls == TEXT) {
            if (info->replaced) {
                *skip = 1;
                if (add_text(b) < 0) {
                    return -1;
                }
            }
            else if (text_has_ink(node->children) && add_text(b) < 0) {
                return -1;
            }
        }
        else {
            opened = 1;
            if (open_container(b, info->cls) < 0) {
                return -1;
            }
            if (text_has_ink(node->children) && add_text(b) < 0) {
                return -1;
            }
        }
    }
    if (!vec_reserve(&b->opened, 1)) {
        return -1;
    }
    VEC_AT(b->opened, uint8_t, b->opened.len++) = (uint8_t)opened;
    return 0;
}

/* The 'end' event: close what the element opened; its tail belongs to the parent context. */
static int
walk_end(Builder *b, xmlNode *node, xmlNode *root)
{
    if (VEC_AT(b->opened, uint8_t, --b->opened.len)) {
        close_container(b);
    }
    if (node != root && text_has_ink(node->next) && add_text(b) < 0) {
        return -1;
    }
    return 0;
}

/* The class of the term's root: the root element's tag, not lower-cased, grp by default. */
static int
root_class(PyObject *classes, xmlNode *root)
{
    if (root->type != XML_ELEMENT_NODE || root->name == NULL) {
        return GRP;
    }
    PyObject *tag = tag_string(root);
    if (tag == NULL) {
        return -2;
    }
    int cls = lookup_class(classes, tag);
    Py_DECREF(tag);
    if (cls == -2) {
        return -2;
    }
    return (cls == NEVER || cls == TEXT) ? GRP : cls;
}

static int
run_translate(Builder *b, TagCache *tc, xmlNode *root, Py_ssize_t *best_depth)
{
    Py_ssize_t depth = 0, best = 0;
    int top = root_class(tc->classes, root);
    if (top == -2) {
        return -1;
    }
    if (emit(b, top) < 0 || !vec_reserve(&b->containers, 1) || !vec_reserve(&b->in_run, 1)) {
        goto nomem;
    }
    VEC_AT(b->containers, Py_ssize_t, b->containers.len++) = 0;
    VEC_AT(b->in_run, uint8_t, b->in_run.len++) = 0;

    xmlNode *cur = root;
    for (;;) {
        int skip;
        if (++depth > best) {
            best = depth;
        }
        if (walk_start(b, tc, cur, root, &skip) < 0) {
            goto fail;
        }
        xmlNode *child = skip ? NULL : walkable(cur->children);
        if (child != NULL) {
            cur = child;
            continue;
        }
        for (;;) {
            depth--;
            if (walk_end(b, cur, root) < 0) {
                goto nomem;
            }
            if (cur == root) {
                goto done;
            }
            xmlNode *sibling = walkable(cur->next);
            if (sibling != NULL) {
                cur = sibling;
                break;
            }
            cur = cur->parent;
            if (cur == NULL) {
                PyErr_SetString(PyExc_ValueError, "broken tree: a node without its parent");
                return -1;
            }
        }
    }
done:
    VEC_AT(b->sizes, Py_ssize_t, 0) = (Py_ssize_t)b->labels.len;
    *best_depth = best;
    return 0;
nomem:
    PyErr_NoMemory();
    return -1;
fail:
    if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    return -1;
}

static PyObject *
sizes_list(const Py_ssize_t *sizes, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *v = PyLong_FromSsize_t(sizes[i]);
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

PyDoc_STRVAR(translate_doc,
"translate(root, classes, replaced) -> (labels: bytes, sizes: list[int], depth: int)\n\n"
"The raw marked term of an lxml tree, exactly as term.translate_python builds it.\n"
"classes maps lower-case tags to codes (0 grp, 1 row, 2 col, 3 text, -1 never\n"
"rendered; absent tags are 3); replaced holds the inline tags that are content by\n"
"themselves. labels has one code byte per node in preorder, sizes the subtree sizes,\n"
"depth the deepest element level the walk saw.");

static PyObject *
term_translate(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *root_obj, *classes, *replaced;
    if (!PyArg_ParseTuple(args, "OO!O:translate", &root_obj, &PyDict_Type, &classes,
                          &replaced)) {
        return NULL;
    }
    if (!PyObject_TypeCheck(root_obj, element_type)) {
        PyErr_Format(PyExc_TypeError, "translate needs an lxml element, not %.100s",
                     Py_TYPE(root_obj)->tp_name);
        return NULL;
    }
    xmlNode *root = (xmlNode *)((ElementHead *)root_obj)->c_node;
    if (root == NULL || root->type != XML_ELEMENT_NODE) {
        /* iterwalk refuses comments, PIs and entities as roots the same way */
        PyErr_SetString(PyExc_ValueError, "translate needs an element as the root");
        return NULL;
    }
    Builder b;
    vec_init(&b.labels, 1);
    vec_init(&b.sizes, sizeof(Py_ssize_t));
    vec_init(&b.containers, sizeof(Py_ssize_t));
    vec_init(&b.in_run, 1);
    vec_init(&b.opened, 1);
    TagCache tc = {NULL, 0, 0, classes, replaced};
    Py_ssize_t depth = 0;
    PyObject *result = NULL;

    Py_INCREF(root_obj); /* keeps the document alive through the Python calls below */
    if (run_translate(&b, &tc, root, &depth) == 0) {
        PyObject *labels = PyBytes_FromStringAndSize(b.labels.data, (Py_ssize_t)b.labels.len);
        PyObject *sizes = labels ? sizes_list(b.sizes.data, b.sizes.len) : NULL;
        if (sizes != NULL) {
            result = Py_BuildValue("(NNn)", labels, sizes, depth);
        }
        else {
            Py_XDECREF(labels);
        }
    }
    Py_DECREF(root_obj);
    builder_free(&b);
    free(tc.slots);
    return result;
}

/* ------------------------------------------------------------------ compress */

#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 wide_t;
#else
typedef int64_t wide_t;
#endif

enum { OK = 0, ERR_NOMEM = 1, ERR_OVERFLOW = 2 };

typedef struct {
    Py_ssize_t n;
    uint8_t *label;
    int64_t *mark;
    int32_t *first; /* first child, -1 for a leaf */
    int32_t *next;  /* next sibling, -1 for the last */
    int32_t *shape; /* structural id, valid within one hrz pass */
    int32_t root;
    int32_t *stack; /* scratch, n entries */
    Vec join_stack; /* JoinFrame */
    Vec keys;       /* int32 pool of interned (label, arity, kid shapes...) keys */
    Vec key_at;     /* size_t: where each shape's key starts in the pool */
    int32_t *table; /* open addressing over shape ids, -1 empty */
    size_t table_cap;
    int err;
} Forest;

typedef struct {
    int32_t x, y;
    wide_t k1, k2, p;
} JoinFrame;

static void
forest_free(Forest *f)
{
    free(f->label);
    free(f->mark);
    free(f->first);
    free(f->next);
    free(f->shape);
    free(f->stack);
    free(f->table);
    vec_free(&f->join_stack);
    vec_free(&f->keys);
    vec_free(&f->key_at);
}

/* Def. 4.6: a chain link whose folding loses no repetition and keeps groups and content. */
static inline int
is_safe(const Forest *f, int32_t v)
{
    int32_t k = f->first[v];
    if (f->mark[v] != 1 || k < 0 || f->next[k] >= 0) {
        return 0;
    }
    if (f->label[k] == TEXT) {
        return 0;
    }
    return !(f->label[v] == GRP && f->label[k] != GRP);
}

/* shr: either v adopts its kid's children (returns v), or the kid takes v's place. */
static inline int32_t
shrink(Forest *f, int32_t v)
{
    int32_t k = f->first[v];
    if (f->mark[k] == 1 && f->label[k] != GRP) {
        f->first[v] = f->first[k];
        return v;
    }
    f->next[k] = f->next[v];
    return k;
}

static int
vrt_pass(Forest *f)
{
    int changed = 0;
    while (is_safe(f, f->root)) {
        f->root = shrink(f, f->root);
        changed = 1;
    }
    Py_ssize_t top = 0;
    f->stack[top++] = f->root;
    while (top > 0) {
        int32_t v = f->stack[--top];
        int32_t prev = -1;
        for (int32_t k = f->first[v]; k >= 0; k = f->next[k]) {
            if (is_safe(f, k)) {
                while (is_safe(f, k)) {
                    k = shrink(f, k);
                }
                if (prev < 0) {
                    f->first[v] = k;
                }
                else {
                    f->next[prev] = k;
                }
                changed = 1;
            }
            f->stack[top++] = k;
            prev = k;
        }
    }
    return changed;
}

static size_t
key_hash(const int32_t *key, size_t len)
{
    uint64_t h = 0xCBF29CE484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (uint32_t)key[i];
        h *= 0x100000001B3ULL;
        h ^= h >> 32;
    }
    return (size_t)h;
}

static int
table_resize(Forest *f, size_t cap)
{
    int32_t *table = malloc(cap * sizeof(int32_t));
    if (table == NULL) {
        return -1;
    }
    memset(table, 0xFF, cap * sizeof(int32_t));
    size_t count = f->key_at.len;
    for (size_t id = 0; id < count; id++) {
        size_t at = VEC_AT(f->key_at, size_t, id);
        const int32_t *key = &VEC_AT(f->keys, int32_t, at);
        size_t j = key_hash(key, 2 + (size_t)key[1]) & (cap - 1);
        while (table[j] >= 0) {
            j = (j + 1) & (cap - 1);
        }
        table[j] = (int32_t)id;
    }
    free(f->table);
    f->table = table;
    f->table_cap = cap;
    return 0;
}

/* The shape id of v from its label and its kids' shapes (interned). */
static int32_t
intern_shape(Forest *f, int32_t v)
{
    size_t arity = 0;
    for (int32_t k = f->first[v]; k >= 0; k = f->next[k]) {
        arity++;
    }
    if (!vec_reserve(&f->keys, arity + 2)) {
        return -1;
    }
    size_t at = f->keys.len;
    int32_t *key = &VEC_AT(f->keys, int32_t, at);
    key[0] = f->label[v];
    key[1] = (int32_t)arity;
    size_t i = 2;
    for (int32_t k = f->first[v]; k >= 0; k = f->next[k]) {
        key[i++] = f->shape[k];
    }
    size_t len = arity + 2;
    if ((f->key_at.len + 1) * 2 > f->table_cap) {
        if (table_resize(f, f->table_cap ? f->table_cap * 2 : 1024) < 0) {
            return -1;
        }
        key = &VEC_AT(f->keys, int32_t, at);
    }
    size_t mask = f->table_cap - 1;
    size_t j = key_hash(key, len) & mask;
    while (f->table[j] >= 0) {
        int32_t id = f->table[j];
        const int32_t *other = &VEC_AT(f->keys, int32_t, VEC_AT(f->key_at, size_t, id));
        if (other[1] == key[1] && memcmp(other, key, len * sizeof(int32_t)) == 0) {
            return id; /* the scratch key at the pool's end is dropped */
        }
        j = (j + 1) & mask;
    }
    if (!vec_reserve(&f->key_at, 1)) {
        return -1;
    }
    int32_t id = (int32_t)f->key_at.len;
    VEC_AT(f->key_at, size_t, f->key_at.len++) = at;
    f->keys.len += len;
    f->table[j] = id;
    return id;
}

/* Shapes bottom-up (postorder through an explicit stack; ~v marks "kids done"). */
static int
assign_shapes(Forest *f)
{
    f->keys.len = 0;
    f->key_at.len = 0;
    if (f->table != NULL) {
        memset(f->table, 0xFF, f->table_cap * sizeof(int32_t));
    }
    Py_ssize_t top = 0;
    f->stack[top++] = f->root;
    while (top > 0) {
        int32_t v = f->stack[--top];
        if (v < 0) {
            int32_t id = intern_shape(f, ~v);
            if (id < 0) {
                return -1;
            }
            f->shape[~v] = id;
            continue;
        }
        f->stack[top++] = ~v;
        for (int32_t k = f->first[v]; k >= 0; k = f->next[k]) {
            f->stack[top++] = k;
        }
    }
    return 0;
}

static inline int
mul_ok(wide_t a, wide_t b, wide_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

/* join of Def. 4.2 with cumulative ancestor marks, written into a's nodes (b is dropped). */
static int
join_into(Forest *f, int32_t a, int32_t b)
{
    Vec *js = &f->join_stack;
    js->len = 0;
    if (!vec_reserve(js, 1)) {
        return ERR_NOMEM;
    }
    VEC_AT(*js, JoinFrame, js->len++) = (JoinFrame){a, b, 1, 1, 1};
    while (js->len > 0) {
        JoinFrame fr = VEC_AT(*js, JoinFrame, --js->len);
        wide_t r1 = f->mark[fr.x], r2 = f->mark[fr.y];
        wide_t k1x, k2y, sum, pm;
        if (!mul_ok(r1, fr.k1, &k1x) || !mul_ok(r2, fr.k2, &k2y) ||
            __builtin_add_overflow(k1x, k2y, &sum)) {
            return ERR_OVERFLOW;
        }
        wide_t m = sum / fr.p + (sum % fr.p != 0);
        if (m > INT64_MAX || !mul_ok(fr.p, m, &pm)) {
            return ERR_OVERFLOW;
        }
        f->mark[fr.x] = (int64_t)m;
        int32_t cx = f->first[fr.x], cy = f->first[fr.y];
        for (; cx >= 0 && cy >= 0; cx = f->next[cx], cy = f->next[cy]) {
            if (!vec_reserve(js, 1)) {
                return ERR_NOMEM;
            }
            VEC_AT(*js, JoinFrame, js->len++) = (JoinFrame){cx, cy, k1x, k2y, pm};
        }
    }
    return OK;
}

/* Def. 4.4, top-down: pack each level's runs of equal-shape siblings, then the next level. */
static int
hrz_pass(Forest *f)
{
    if (assign_shapes(f) < 0) {
        f->err = ERR_NOMEM;
        return 0;
    }
    int changed = 0;
    Py_ssize_t top = 0;
    f->stack[top++] = f->root;
    while (top > 0) {
        int32_t v = f->stack[--top];
        int32_t prev = f->first[v];
        if (prev >= 0) {
            for (int32_t k = f->next[prev]; k >= 0;) {
                int32_t after = f->next[k];
                if (f->shape[k] == f->shape[prev]) {
                    int err = join_into(f, prev, k);
                    if (err != OK) {
                        f->err = err;
                        return 0;
                    }
                    f->next[prev] = after;
                    changed = 1;
                }
                else {
                    prev = k;
                }
                k = after;
            }
        }
        for (int32_t k = f->first[v]; k >= 0; k = f->next[k]) {
            f->stack[top++] = k;
        }
    }
    return changed;
}

/* compress = hrz ∘ vrt until nothing changes (the alternation compress_python runs). */
static void
run_compress(Forest *f)
{
    for (;;) {
        int folded = vrt_pass(f);
        int packed = hrz_pass(f);
        if (f->err != OK || !(folded || packed)) {
            return;
        }
    }
}

/* Reads flat preorder arrays into the linked forest; -1 with an exception set. */
static int
forest_load(Forest *f, PyObject *labels_obj, PyObject *marks_obj, PyObject *sizes_obj)
{
    Py_buffer labels;
    if (PyObject_GetBuffer(labels_obj, &labels, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    PyObject *marks = NULL, *sizes = NULL;
    int32_t *end = NULL;
    int rc = -1;
    Py_ssize_t n = labels.len;
    if (marks_obj != Py_None) {
        marks = PySequence_Fast(marks_obj, "marks must be a sequence of integers");
        if (marks == NULL) {
            goto out;
        }
    }
    sizes = PySequence_Fast(sizes_obj, "sizes must be a sequence of integers");
    if (sizes == NULL) {
        goto out;
    }
    if ((marks && PySequence_Fast_GET_SIZE(marks) != n) || PySequence_Fast_GET_SIZE(sizes) != n) {
        PyErr_SetString(PyExc_ValueError, "labels, marks and sizes differ in length");
        goto out;
    }
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "an empty term has nothing to compress");
        goto out;
    }
    if (n >= INT32_MAX / 2) {
        PyErr_SetString(PyExc_OverflowError, "term too large for the compiled kernel");
        goto out;
    }
    f->n = n;
    f->label = malloc((size_t)n);
    f->mark = malloc((size_t)n * sizeof(int64_t));
    f->first = malloc((size_t)n * sizeof(int32_t));
    f->next = malloc((size_t)n * sizeof(int32_t));
    f->shape = malloc((size_t)n * sizeof(int32_t));
    f->stack = malloc(((size_t)n + 1) * sizeof(int32_t));
    end = malloc((size_t)n * sizeof(int32_t));
    int32_t *last = f->shape; /* borrowed as "last child" while loading */
    if (!f->label || !f->mark || !f->first || !f->next || !f->shape || !f->stack || !end) {
        PyErr_NoMemory();
        goto out;
    }
    memcpy(f->label, labels.buf, (size_t)n);
    PyObject **mitems = marks ? PySequence_Fast_ITEMS(marks) : NULL;
    PyObject **sitems = PySequence_Fast_ITEMS(sizes);
    Py_ssize_t top = 0; /* open ancestors on f->stack */
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t m = 1;
        if (mitems) {
            long long v = PyLong_AsLongLong(mitems[i]);
            if (v == -1 && PyErr_Occurred()) {
                goto out;
            }
            if (v < 1) {
                PyErr_SetString(PyExc_ValueError, "repetition marks are positive");
                goto out;
            }
            m = (int64_t)v;
        }
        Py_ssize_t s = PyLong_AsSsize_t(sitems[i]);
        if (s == -1 && PyErr_Occurred()) {
            goto out;
        }
        while (top > 0 && end[f->stack[top - 1]] <= i) {
            top--;
        }
        Py_ssize_t limit = top > 0 ? end[f->stack[top - 1]] : n;
        if (s < 1 || s > limit - i || (i == 0 && s != n)) {
            PyErr_Format(PyExc_ValueError, "inconsistent subtree size %zd at node %zd", s, i);
            goto out;
        }
        f->mark[i] = m;
        f->first[i] = f->next[i] = last[i] = -1;
        end[i] = (int32_t)(i + s);
        if (top > 0) {
            int32_t parent = f->stack[top - 1];
            if (last[parent] < 0) {
                f->first[parent] = (int32_t)i;
            }
            else {
                f->next[last[parent]] = (int32_t)i;
            }
            last[parent] = (int32_t)i;
        }
        f->stack[top++] = (int32_t)i;
    }
    f->root = 0;
    rc = 0;
out:
    free(end);
    Py_XDECREF(marks);
    Py_XDECREF(sizes);
    PyBuffer_Release(&labels);
    return rc;
}

/* Flattens the compressed tree back into preorder arrays (the forest's scratch is reused). */
static PyObject *
forest_dump(Forest *f)
{
    Py_ssize_t n = f->n;
    int32_t *order = malloc((size_t)n * sizeof(int32_t));
    int32_t *parent = malloc((size_t)n * sizeof(int32_t));
    Py_ssize_t *sizes = malloc((size_t)n * sizeof(Py_ssize_t));
    PyObject *result = NULL, *labels = NULL, *marks = NULL, *size_list = NULL;
    if (!order || !parent || !sizes) {
        PyErr_NoMemory();
        goto out;
    }
    /* preorder: the stack holds nodes; parent[] is indexed by output position */
    Py_ssize_t count = 0, top = 0;
    f->stack[top++] = f->root;
    f->shape[f->root] = -1; /* shape[] now holds the output index of each node's parent */
    while (top > 0) {
        int32_t v = f->stack[--top];
        parent[count] = f->shape[v];
        order[count] = v;
        Py_ssize_t base = top;
        for (int32_t k = f->first[v]; k >= 0; k = f->next[k]) {
            f->shape[k] = (int32_t)count;
            f->stack[top++] = k;
        }
        for (Py_ssize_t lo = base, hi = top - 1; lo < hi; lo++, hi--) {
            int32_t t = f->stack[lo];
            f->stack[lo] = f->stack[hi];
            f->stack[hi] = t;
        }
        count++;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        sizes[i] = 1;
    }
    for (Py_ssize_t i = count - 1; i > 0; i--) {
        sizes[parent[i]] += sizes[i];
    }
    labels = PyBytes_FromStringAndSize(NULL, count);
    marks = PyList_New(count);
    if (labels == NULL || marks == NULL) {
        goto out;
    }
    char *lb = PyBytes_AS_STRING(labels);
    for (Py_ssize_t i = 0; i < count; i++) {
        lb[i] = (char)f->label[order[i]];
        PyObject *m = PyLong_FromLongLong(f->mark[order[i]]);
        if (m == NULL) {
            goto out;
        }
        PyList_SET_ITEM(marks, i, m);
    }
    size_list = sizes_list(sizes, (size_t)count);
    if (size_list == NULL) {
        goto out;
    }
    result = PyTuple_Pack(3, labels, marks, size_list);
out:
    Py_XDECREF(labels);
    Py_XDECREF(marks);
    Py_XDECREF(size_list);
    free(order);
    free(parent);
    free(sizes);
    return result;
}

PyDoc_STRVAR(compress_doc,
"compress(labels: bytes, marks: list[int] | None, sizes: list[int])\n"
"    -> (labels: bytes, marks: list[int], sizes: list[int])\n\n"
"The irreducible term, exactly as term.compress_python computes it. Labels are codes\n"
"(0 grp and 3 text matter to vrt); marks None means every mark is 1. Raises\n"
"OverflowError when join's ancestor products outgrow the machine integers.");

static PyObject *
term_compress(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *labels, *marks, *sizes;
    if (!PyArg_ParseTuple(args, "OOO:compress", &labels, &marks, &sizes)) {
        return NULL;
    }
    Forest f;
    memset(&f, 0, sizeof f);
    vec_init(&f.join_stack, sizeof(JoinFrame));
    vec_init(&f.keys, sizeof(int32_t));
    vec_init(&f.key_at, sizeof(size_t));
    PyObject *result = NULL;
    if (forest_load(&f, labels, marks, sizes) == 0) {
        Py_BEGIN_ALLOW_THREADS
        run_compress(&f);
        Py_END_ALLOW_THREADS
        if (f.err == ERR_NOMEM) {
            PyErr_NoMemory();
        }
        else if (f.err == ERR_OVERFLOW) {
            PyErr_SetString(PyExc_OverflowError,
                            "repetition marks outgrow the compiled kernel's integers");
        }
        else {
            result = forest_dump(&f);
        }
    }
    forest_free(&f);
    return result;
}

/* ------------------------------------------------------------------ module */

/* Checks on a small tree that lxml's element and libxml2's node layouts are the expected. */
static int
probe_layout(PyObject *etree)
{
    PyObject *root = NULL, *sub = NULL, *attrs = NULL, *text = NULL, *tail = NULL;
    int ok = 0;
    if (element_type->tp_basicsize < (Py_ssize_t)sizeof(ElementHead)) {
        goto out;
    }
    root = PyObject_CallMethod(etree, "Element", "s", "visdup-probe");
    attrs = Py_BuildValue("{ss}", "hidden", "x");
    if (root == NULL || attrs == NULL) {
        goto out;
    }
    sub = PyObject_CallMethod(etree, "SubElement", "OsO", root, "b", attrs);
    text = PyUnicode_FromString("t");
    tail = PyUnicode_FromString("u");
    if (sub == NULL || text == NULL || tail == NULL ||
        PyObject_SetAttrString(sub, "text", text) < 0 ||
        PyObject_SetAttrString(sub, "tail", tail) < 0) {
        goto out;
    }
    if (!PyObject_TypeCheck(root, element_type) || !PyObject_TypeCheck(sub, element_type)) {
        goto out;
    }
    PyObject *doc = ((ElementHead *)root)->doc;
    if (doc == NULL || strstr(Py_TYPE(doc)->tp_name, "_Document") == NULL) {
        goto out;
    }
    xmlNode *r = (xmlNode *)((ElementHead *)root)->c_node;
    xmlNode *s = (xmlNode *)((ElementHead *)sub)->c_node;
    ok = r != NULL && s != NULL && r->type == XML_ELEMENT_NODE && r->name != NULL &&
         strcmp((const char *)r->name, "visdup-probe") == 0 && r->children == s &&
         s->parent == r && s->type == XML_ELEMENT_NODE && s->properties != NULL &&
         s->properties->name != NULL && strcmp((const char *)s->properties->name, "hidden") == 0 &&
         s->properties->children != NULL && s->properties->children->content != NULL &&
         strcmp((const char *)s->properties->children->content, "x") == 0 &&
         s->children != NULL && s->children->type == XML_TEXT_NODE &&
         strcmp((const char *)s->children->content, "t") == 0 && s->next != NULL &&
         s->next->type == XML_TEXT_NODE && strcmp((const char *)s->next->content, "u") == 0;
out:
    Py_XDECREF(root);
    Py_XDECREF(sub);
    Py_XDECREF(attrs);
    Py_XDECREF(text);
    Py_XDECREF(tail);
    if (PyErr_Occurred()) {
        return -1;
    }
    if (!ok) {
        PyErr_SetString(PyExc_ImportError,
                        "lxml's tree layout differs from the one visdup._term was built for");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ text form */

/* Appends n bytes to a byte Vec; -1 with MemoryError set when it cannot grow. */
static int
text_put(Vec *t, const char *s, size_t n)
{
    if (!vec_reserve(t, n)) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy((char *)t->data + t->len, s, n);
    t->len += n;
    return 0;
}

PyDoc_STRVAR(print_doc,
"print_term(labels, marks, sizes) -> str | None\n\n"
"A term's text form, exactly as Term._print_python writes it from the same tuples: the\n"
"same tokens for any sizes, nested or not. None where Python must print it: a label not a\n"
"str (or not encodable), a mark or size not an int within 64 bits, tuples of unequal length.");

static PyObject *
term_print(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *labels, *marks, *sizes;
    if (!PyArg_ParseTuple(args, "O!O!O!:print_term", &PyTuple_Type, &labels, &PyTuple_Type,
                          &marks, &PyTuple_Type, &sizes)) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(labels);
    if (PyTuple_GET_SIZE(marks) != n || PyTuple_GET_SIZE(sizes) != n) {
        Py_RETURN_NONE;
    }
    /* the ends of the subtrees still open, innermost last, as the Python stack holds them */
    long long *ends = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(long long));
    if (ends == NULL) {
        return PyErr_NoMemory();
    }
    Vec out;
    vec_init(&out, 1);
    PyObject *result = NULL;
    Py_ssize_t open = 0;
    int after_open = 0; /* the last token written is "(" */
    int python = 0;     /* a value only Python prints the same */
    char digits[32];
    for (Py_ssize_t i = 0; i < n && !python; i++) {
        while (open > 0 && ends[open - 1] == (long long)i) {
            if (text_put(&out, ")", 1) < 0) goto done;
            after_open = 0;
            open--;
        }
        if (i > 0 && !after_open) {
            if (text_put(&out, ",", 1) < 0) goto done;
        }
        PyObject *mark = PyTuple_GET_ITEM(marks, i), *label = PyTuple_GET_ITEM(labels, i);
        PyObject *size = PyTuple_GET_ITEM(sizes, i);
        if (!PyLong_CheckExact(mark) || !PyLong_CheckExact(size) || !PyUnicode_CheckExact(label)) {
            python = 1;
            break;
        }
        int overflow = 0;
        long long m = PyLong_AsLongLongAndOverflow(mark, &overflow);
        long long s = overflow ? 0 : PyLong_AsLongLongAndOverflow(size, &overflow);
        if (overflow) {
            python = 1;
            break;
        }
        if (PyErr_Occurred()) goto done;
        Py_ssize_t length;
        const char *utf8 = PyUnicode_AsUTF8AndSize(label, &length);
        if (utf8 == NULL) { /* a lone surrogate: Python's own string handling prints it */
            PyErr_Clear();
            python = 1;
            break;
        }
        if (m != 1) {
            int k = snprintf(digits, sizeof digits, "[%lld]", m);
            if (text_put(&out, digits, (size_t)k) < 0) goto done;
        }
        if (text_put(&out, utf8, (size_t)length) < 0) goto done;
        after_open = 0;
        if (s > 1) {
            if (text_put(&out, "(", 1) < 0) goto done;
            after_open = 1;
            /* an end past the last node is met by none: any such end closes only at the end */
            ends[open++] = s > (long long)n ? (long long)n + 1 : (long long)i + s;
        }
    }
    if (python) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    while (open-- > 0) {
        if (text_put(&out, ")", 1) < 0) goto done;
    }
    result = PyUnicode_DecodeUTF8(out.data ? (const char *)out.data : "", (Py_ssize_t)out.len,
                                  "strict");
done:
    PyMem_Free(ends);
    vec_free(&out);
    return result;
}

static int
term_exec(PyObject *module)
{
    PyObject *etree = PyImport_ImportModule("lxml.etree");
    if (etree == NULL) {
        return -1;
    }
    PyObject *cls = PyObject_GetAttrString(etree, "_Element");
    if (cls == NULL || !PyType_Check(cls)) {
        Py_XDECREF(cls);
        Py_DECREF(etree);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ImportError, "lxml.etree._Element is not a type");
        }
        return -1;
    }
    Py_XSETREF(element_type, (PyTypeObject *)cls);
    int rc = probe_layout(etree);
    Py_DECREF(etree);
    if (rc < 0) {
        return -1;
    }
    return PyModule_AddStringConstant(module, "LIBXML_HEADERS", LIBXML_DOTTED_VERSION);
}

static PyMethodDef term_methods[] = {
    {"translate", term_translate, METH_VARARGS, translate_doc},
    {"compress", term_compress, METH_VARARGS, compress_doc},
    {"print_term", term_print, METH_VARARGS, print_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot term_slots[] = {
    {Py_mod_exec, term_exec},
    {0, NULL},
};

static struct PyModuleDef term_module = {
    PyModuleDef_HEAD_INIT,
    "_term",
    "Compiled translation and compression of visual terms (see visdup.term).",
    0,
    term_methods,
    term_slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__term(void)
{
    return PyModuleDef_Init(&term_module);
}
