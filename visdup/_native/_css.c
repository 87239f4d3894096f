/* Style-sheet kernels: the scan of a page's own <style> text for the rules a screen applies.
 *
 * - rule_bodies(css): visdup.content.css._rule_bodies(css) less the rules whose body names
 *   none of the properties that can hide an element (their declarations are empty, so
 *   style_rules yields nothing for them): (prelude, body) of each rule that is neither inside
 *   a skipped at-rule block nor holds blocks of its own, in the order the rules close;
 * - hiding_declarations(text): the parts of a rule's body or an inline style whose property
 *   can hide an element, as css.declarations reads them, each value as written.
 *
 * A page's sheet is read once per process (css._read_sheet keeps it), but on a crawl that
 * meets many sites, or pages whose inline sheets differ, every page pays the scan: in Python
 * it cost about what parsing the page costs. The Python scan is the reference; tests hold the
 * two to one output on random and real sheets.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

enum { FRAME_MEDIA, FRAME_RULE, FRAME_SKIP };

typedef struct {
    int kind;
    int nested;
    Py_ssize_t prelude_start, prelude_end, body_start;
} Frame;

typedef struct {
    Frame *frames;
    Py_ssize_t size, capacity;
} Stack;

static int
stack_push(Stack *s, Frame frame)
{
    if (s->size == s->capacity) {
        Py_ssize_t capacity = s->capacity ? 2 * s->capacity : 16;
        Frame *grown = PyMem_Realloc(s->frames, (size_t)capacity * sizeof(Frame));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        s->frames = grown;
        s->capacity = capacity;
    }
    s->frames[s->size++] = frame;
    return 0;
}

static inline Py_UCS4
ascii_lower(Py_UCS4 c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

/* Whether text[start:end] holds `name` (lowercase ASCII) at `at`, ASCII letters in any case. */
static inline int
holds_at(int kind, const void *data, Py_ssize_t at, Py_ssize_t end, const char *name,
         Py_ssize_t length)
{
    if (end - at < length) return 0;
    for (Py_ssize_t k = 0; k < length; k++) {
        if (ascii_lower(PyUnicode_READ(kind, data, at + k)) != (Py_UCS4)(unsigned char)name[k]) {
            return 0;
        }
    }
    return 1;
}

/* The properties that can hide an element (css.HIDE_STYLE_PROPS), lowercase, and the Python
 * strings hiding_declarations gives them as (made once, as the module starts). */
static const struct {
    const char *name;
    Py_ssize_t length;
} hiding[] = {
    {"display", 7}, {"visibility", 10}, {"position", 8}, {"opacity", 7},
    {"clip", 4},    {"clip-path", 9},   {"left", 4},     {"text-indent", 11},
};
#define HIDING_NAMES (sizeof(hiding) / sizeof(hiding[0]))
static PyObject *hiding_strings[HIDING_NAMES];

/* Whether a rule's body names a property that can hide an element, in any case. Python
 * lowercases each property before it looks it up; no character outside ASCII lowercases into
 * these names (U+0130 gives "i" and a combining dot, which no name holds), so a body without
 * them has no declaration css.declarations keeps. */
static int
names_a_hiding_property(int kind, const void *data, Py_ssize_t start, Py_ssize_t end)
{
    for (Py_ssize_t at = start; at < end; at++) {
        Py_UCS4 c = ascii_lower(PyUnicode_READ(kind, data, at));
        for (size_t k = 0; k < HIDING_NAMES; k++) {
            if ((Py_UCS4)(unsigned char)hiding[k].name[0] == c &&
                holds_at(kind, data, at, end, hiding[k].name, hiding[k].length)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Which of the names text[start:end] is, ASCII letters in any case (-1: none of them). */
static int
hiding_name(int kind, const void *data, Py_ssize_t start, Py_ssize_t end)
{
    for (size_t k = 0; k < HIDING_NAMES; k++) {
        if (end - start == hiding[k].length &&
            holds_at(kind, data, start, end, hiding[k].name, hiding[k].length)) {
            return (int)k;
        }
    }
    return -1;
}

/* Whether an at-rule's prelude opens a block the page applies on load: css._rule_bodies'
 * `media.startswith("@media") and media[6:].strip() in {"screen", "all"}` of its lowercase
 * form (asked of Python: at-rules are few, and lowercasing outside ASCII is Python's). */
static int
applied_media(PyObject *prelude)
{
    PyObject *media = PyObject_CallMethod(prelude, "lower", NULL);
    if (media == NULL) return -1;
    int ok = 0;
    Py_ssize_t length = PyUnicode_GET_LENGTH(media);
    PyObject *at = PyUnicode_FromString("@media");
    if (at == NULL) {
        Py_DECREF(media);
        return -1;
    }
    Py_ssize_t starts = PyUnicode_Tailmatch(media, at, 0, length, -1);
    Py_DECREF(at);
    if (starts < 0) {
        Py_DECREF(media);
        return -1;
    }
    if (starts) {
        PyObject *rest = PyUnicode_Substring(media, 6, length);
        PyObject *stripped = rest != NULL ? PyObject_CallMethod(rest, "strip", NULL) : NULL;
        Py_XDECREF(rest);
        if (stripped == NULL) {
            Py_DECREF(media);
            return -1;
        }
        ok = PyUnicode_CompareWithASCIIString(stripped, "screen") == 0 ||
             PyUnicode_CompareWithASCIIString(stripped, "all") == 0;
        Py_DECREF(stripped);
    }
    Py_DECREF(media);
    return ok;
}

static int
emit(PyObject *out, PyObject *css, const Frame *rule, Py_ssize_t body_end)
{
    PyObject *prelude = PyUnicode_Substring(css, rule->prelude_start, rule->prelude_end);
    if (prelude == NULL) return -1;
    PyObject *body = PyUnicode_Substring(css, rule->body_start, body_end);
    if (body == NULL) {
        Py_DECREF(prelude);
        return -1;
    }
    PyObject *pair = PyTuple_Pack(2, prelude, body);
    Py_DECREF(prelude);
    Py_DECREF(body);
    if (pair == NULL) return -1;
    int rc = PyList_Append(out, pair);
    Py_DECREF(pair);
    return rc;
}

/* The prelude of a block opened at `open`: css[start:open].rpartition(";")[2].strip(). */
static void
prelude_of(int kind, const void *data, Py_ssize_t start, Py_ssize_t open, Py_ssize_t *first,
           Py_ssize_t *last)
{
    Py_ssize_t from = open;
    while (from > start && PyUnicode_READ(kind, data, from - 1) != ';') from--;
    Py_ssize_t to = open;
    while (from < to && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, from))) from++;
    while (to > from && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, to - 1))) to--;
    *first = from;
    *last = to;
}

static PyObject *
py_rule_bodies(PyObject *self, PyObject *css)
{
    if (!PyUnicode_Check(css)) {
        PyErr_SetString(PyExc_TypeError, "rule_bodies: css must be a str");
        return NULL;
    }
    const int kind = PyUnicode_KIND(css);
    const void *data = PyUnicode_DATA(css);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(css);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    Stack stack = {NULL, 0, 0};
    Py_ssize_t start = 0;
    for (Py_ssize_t pos = 0; pos < n; pos++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, pos);
        if (c == '{') {
            Py_ssize_t first, last;
            prelude_of(kind, data, start, pos, &first, &last);
            Frame frame = {FRAME_RULE, 0, first, last, pos + 1};
            if (stack.size && stack.frames[stack.size - 1].kind != FRAME_MEDIA) {
                stack.frames[stack.size - 1].nested = 1;
                frame.kind = FRAME_SKIP;
            } else if (first < last && PyUnicode_READ(kind, data, first) == '@') {
                PyObject *prelude = PyUnicode_Substring(css, first, last);
                int ok = prelude != NULL ? applied_media(prelude) : -1;
                Py_XDECREF(prelude);
                if (ok < 0) goto failed;
                frame.kind = ok ? FRAME_MEDIA : FRAME_SKIP;
            }
            if (stack_push(&stack, frame) < 0) goto failed;
        } else if (c == '}') {
            if (stack.size) {
                Frame frame = stack.frames[--stack.size];
                if (frame.kind == FRAME_RULE && !frame.nested &&
                    names_a_hiding_property(kind, data, frame.body_start, pos) &&
                    emit(out, css, &frame, pos) < 0) {
                    goto failed;
                }
            }
        } else {
            continue;
        }
        start = pos + 1;
    }
    PyMem_Free(stack.frames);
    return out;
failed:
    PyMem_Free(stack.frames);
    Py_DECREF(out);
    return NULL;
}

/* hiding_declarations(text): css.declarations' parts whose property can hide an element, as
 * (property, value as written): each `;`-separated part holding a `:`, its property the
 * text before the first `:` stripped (str.strip) and lowercased. A property outside ASCII
 * once stripped is none of the names (no character outside ASCII lowercases into them). */
static PyObject *
py_hiding_declarations(PyObject *self, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "hiding_declarations: text must be a str");
        return NULL;
    }
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    Py_ssize_t part = 0;
    while (part <= n) {
        Py_ssize_t end = part, colon = -1;
        while (end < n) {
            Py_UCS4 c = PyUnicode_READ(kind, data, end);
            if (c == ';') break;
            if (c == ':' && colon < 0) colon = end;
            end++;
        }
        if (colon >= 0) {
            Py_ssize_t first = part, last = colon;
            while (first < last && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, first))) first++;
            while (last > first && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, last - 1))) last--;
            int name = hiding_name(kind, data, first, last);
            if (name >= 0) {
                PyObject *value = PyUnicode_Substring(text, colon + 1, end);
                PyObject *pair = value != NULL ? PyTuple_Pack(2, hiding_strings[name], value)
                                               : NULL;
                Py_XDECREF(value);
                if (pair == NULL || PyList_Append(out, pair) < 0) {
                    Py_XDECREF(pair);
                    Py_DECREF(out);
                    return NULL;
                }
                Py_DECREF(pair);
            }
        }
        part = end + 1;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"rule_bodies", py_rule_bodies, METH_O,
     "rule_bodies(css) -> [(prelude, body)] of css._rule_bodies(css) whose body names a "
     "property that can hide an element"},
    {"hiding_declarations", py_hiding_declarations, METH_O,
     "hiding_declarations(text) -> [(property, value as written)] of css.declarations' "
     "parts whose property can hide an element, in order"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_css",
                                    "Style-sheet kernels (the rules a screen applies).", -1,
                                    methods};

PyMODINIT_FUNC
PyInit__css(void)
{
    for (size_t k = 0; k < HIDING_NAMES; k++) {
        if (hiding_strings[k] == NULL) {
            hiding_strings[k] = PyUnicode_InternFromString(hiding[k].name);
            if (hiding_strings[k] == NULL) return NULL;
        }
    }
    return PyModule_Create(&module);
}
