/* Text-print kernels: what visdup.content.textprint computes per sentence and per shingle.
 *
 * - blake64(str) and blake64_many(list): int.from_bytes(blake2b(s.encode(), digest_size=8)
 *   .digest(), "big"), the 64-bit hash of every fingerprint layer;
 * - normalise(text, blanks) and long_sentences(paragraph, keep, min_chars, blanks): the
 *   same of text that holds ASCII and blanks only (None for any other, which Python reads);
 * - blanked(folded, is_blank): normalise()'s blanking of text Python has NFKC-normalised and
 *   case-folded;
 * - holding(texts, chars): which texts of a list hold any of a few characters;
 * - numbers_zeroed(text): visible_key's numbers and hex ids, each replaced by one "0";
 * - shingle_simhash(sentences, words): the SimHash of the sentences' word shingles weighted
 *   by their counts (capped at 255), as _shingle_simhash(_shingles(...)) gives it;
 * - layers(blocks, ...): content_print's layers of main-content blocks in one pass (the
 *   text structure tree's fingerprints, the long sentences' hashes and their SimHash);
 * - term_simhash(labels, marks, sizes, ...) and shape_simhash(...): the structural SimHashes
 *   of a visual term (visdup.structure.fingerprint), from the same feature strings;
 * - content_bounds(mine, others): visdup.dedup.prints.content_bound of one print summary
 *   against many, from each summary's packed form (its layers sorted as 64-bit words);
 * - near_keys(fps, fp, k, limit, keys_of): the keys of the fingerprints nearest a SimHash,
 *   as a memory index's scan answers a lookup.
 *
 * The Python functions are the reference; tests hold these to them on random and real text.
 * BLAKE2b is written from RFC 7693 (unkeyed, 8-byte digest).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ BLAKE2b-64 */

static const uint64_t blake_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
    0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
    0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

static inline uint64_t
rotr64(uint64_t x, int n)
{
    return (x >> n) | (x << (64 - n));
}

static inline uint64_t
load64(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v; /* the words are little-endian: on such a machine one load reads one */
    memcpy(&v, p, sizeof(v));
    return v;
#else
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = (v << 8) | p[k];
    return v;
#endif
}

/* BLAKE2b's mixing and round, written once for a rotation ``rot`` of the words ``v`` hold:
 * a uint64_t (rotr64) here, four lanes of them below (ROTR_X4). */
#define BLAKE_G_BY(rot, a, b, c, d, x, y) \
    do {                                  \
        v[a] = v[a] + v[b] + (x);         \
        v[d] = rot(v[d] ^ v[a], 32);      \
        v[c] = v[c] + v[d];               \
        v[b] = rot(v[b] ^ v[c], 24);      \
        v[a] = v[a] + v[b] + (y);         \
        v[d] = rot(v[d] ^ v[a], 16);      \
        v[c] = v[c] + v[d];               \
        v[b] = rot(v[b] ^ v[c], 63);      \
    } while (0)

#define BLAKE_ROUND_BY(rot, s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, \
                       s15)                                                                \
    do {                                                                                   \
        BLAKE_G_BY(rot, 0, 4, 8, 12, m[s0], m[s1]);                                        \
        BLAKE_G_BY(rot, 1, 5, 9, 13, m[s2], m[s3]);                                        \
        BLAKE_G_BY(rot, 2, 6, 10, 14, m[s4], m[s5]);                                       \
        BLAKE_G_BY(rot, 3, 7, 11, 15, m[s6], m[s7]);                                       \
        BLAKE_G_BY(rot, 0, 5, 10, 15, m[s8], m[s9]);                                       \
        BLAKE_G_BY(rot, 1, 6, 11, 12, m[s10], m[s11]);                                     \
        BLAKE_G_BY(rot, 2, 7, 8, 13, m[s12], m[s13]);                                      \
        BLAKE_G_BY(rot, 3, 4, 9, 14, m[s14], m[s15]);                                      \
    } while (0)

#define BLAKE_ROUND(...) BLAKE_ROUND_BY(rotr64, __VA_ARGS__)

static void
blake_compress(uint64_t h[8], const unsigned char block[128], uint64_t counter, int last)
{
    uint64_t v[16], m[16];
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = blake_iv[i];
    }
    v[12] ^= counter; /* messages here stay far below 2^64 bytes: the high word is 0 */
    if (last) v[14] = ~v[14];
    for (int i = 0; i < 16; i++) m[i] = load64(block + 8 * i);
    /* the twelve rounds written out, each with its row of RFC 7693's message schedule
     * (sigma; rounds 10 and 11 reuse rows 0 and 1) as constants: the compiler then keeps
     * the message words in registers, where a loop reads them through a table */
    BLAKE_ROUND(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    BLAKE_ROUND(14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3);
    BLAKE_ROUND(11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4);
    BLAKE_ROUND(7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8);
    BLAKE_ROUND(9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13);
    BLAKE_ROUND(2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9);
    BLAKE_ROUND(12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11);
    BLAKE_ROUND(13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10);
    BLAKE_ROUND(6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5);
    BLAKE_ROUND(10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0);
    BLAKE_ROUND(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    BLAKE_ROUND(14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3);
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* The 8-byte BLAKE2b digest of data, read as a big-endian integer. */
static uint64_t
blake64(const unsigned char *data, size_t len)
{
    uint64_t h[8];
    unsigned char block[128];
    memcpy(h, blake_iv, sizeof(h));
    h[0] ^= 0x01010000ULL ^ 8ULL; /* depth 1, fanout 1, no key, 8-byte digest */
    uint64_t counter = 0;
    while (len > 128) {
        counter += 128;
        blake_compress(h, data, counter, 0);
        data += 128;
        len -= 128;
    }
    memset(block, 0, sizeof(block));
    if (len) memcpy(block, data, len);
    counter += len;
    blake_compress(h, block, counter, 1);
    uint64_t out = 0; /* the digest is h[0] little-endian; Python reads its bytes big-endian */
    for (int k = 0; k < 8; k++) out = (out << 8) | ((h[0] >> (8 * k)) & 0xFF);
    return out;
}

/* blake64 of four short messages at once (at most 128 bytes each: one compression), in the
 * four 64-bit lanes of AVX2's registers, where the CPU has them: a page's thousands of
 * shingles are hashed four by four. The same rounds as blake_compress, lane by lane. */
#if defined(__GNUC__) && defined(__x86_64__)
#define BLAKE_X4 1
typedef uint64_t u64x4 __attribute__((vector_size(32)));

#define ROTR_X4(x, n) (((x) >> (n)) | ((x) << (64 - (n))))
#define BLAKE_ROUND_X4(...) BLAKE_ROUND_BY(ROTR_X4, __VA_ARGS__)

__attribute__((target("avx2"))) static void
blake64_x4(const unsigned char *const data[4], const size_t len[4], uint64_t out[4])
{
    unsigned char block[4][128];
    u64x4 m[16], v[16];
    for (int l = 0; l < 4; l++) {
        memset(block[l], 0, sizeof(block[l]));
        memcpy(block[l], data[l], len[l]);
    }
    for (int i = 0; i < 16; i++)
        m[i] = (u64x4){load64(block[0] + 8 * i), load64(block[1] + 8 * i),
                       load64(block[2] + 8 * i), load64(block[3] + 8 * i)};
    uint64_t h0 = blake_iv[0] ^ 0x01010000ULL ^ 8ULL; /* as blake64's parameter block */
    v[0] = (u64x4){h0, h0, h0, h0};
    for (int i = 1; i < 8; i++) v[i] = (u64x4){blake_iv[i], blake_iv[i], blake_iv[i], blake_iv[i]};
    for (int i = 0; i < 8; i++)
        v[i + 8] = (u64x4){blake_iv[i], blake_iv[i], blake_iv[i], blake_iv[i]};
    v[12] ^= (u64x4){len[0], len[1], len[2], len[3]}; /* each message's byte count */
    v[14] = ~v[14];                                   /* the last (and only) block */
    BLAKE_ROUND_X4(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    BLAKE_ROUND_X4(14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3);
    BLAKE_ROUND_X4(11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4);
    BLAKE_ROUND_X4(7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8);
    BLAKE_ROUND_X4(9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13);
    BLAKE_ROUND_X4(2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9);
    BLAKE_ROUND_X4(12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11);
    BLAKE_ROUND_X4(13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10);
    BLAKE_ROUND_X4(6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5);
    BLAKE_ROUND_X4(10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0);
    BLAKE_ROUND_X4(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    BLAKE_ROUND_X4(14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3);
    u64x4 h = v[0] ^ v[8] ^ (u64x4){h0, h0, h0, h0};
    for (int l = 0; l < 4; l++) out[l] = __builtin_bswap64(h[l]); /* read big-endian */
}

static int
have_avx2(void)
{
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return known;
}
#endif

static PyObject *
py_blake64(PyObject *self, PyObject *arg)
{
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(arg, &n);
    if (s == NULL) return NULL;
    return PyLong_FromUnsignedLongLong(blake64((const unsigned char *)s, (size_t)n));
}

static PyObject *
py_blake64_many(PyObject *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "blake64_many takes a sequence of str");
    if (seq == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(count);
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(seq, i), &n);
        PyObject *value =
            s == NULL ? NULL : PyLong_FromUnsignedLongLong(blake64((const unsigned char *)s, (size_t)n));
        if (value == NULL) {
            Py_DECREF(out);
            Py_DECREF(seq);
            return NULL;
        }
        PyList_SET_ITEM(out, i, value);
    }
    Py_DECREF(seq);
    return out;
}

/* Room for one more item in *items, which holds `count` of *cap; -1 out of memory. */
static int
grow(void **items, Py_ssize_t count, Py_ssize_t *cap, size_t size)
{
    if (count < *cap) return 0;
    Py_ssize_t more = *cap ? *cap * 2 : 16;
    void *grown = realloc(*items, size * (size_t)more);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = grown;
    *cap = more;
    return 0;
}

/* ------------------------------------------------------------------ long sentences
 *
 * normalise() and long_sentences() of textprint for text of ASCII and of the characters
 * that normalising turns to blanks whatever stands around them (punctuation, symbols,
 * separators: the bitmap `blanks`, which Python makes from unicodedata, so both read one
 * Unicode version). Any other character (a letter outside ASCII) returns None: NFKC and
 * case folding are Python's to do.
 */

/* What Python's \s and str.split() call whitespace. */
static inline int
is_space(Py_UCS4 c)
{
    return c < 128 ? (c == ' ' || (c >= 9 && c <= 13) || (c >= 28 && c <= 31))
                   : Py_UNICODE_ISSPACE(c);
}

static inline int
is_alnum(Py_UCS4 c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The terminators of _WESTERN_END, and the closers that stay with their sentence. */
static inline int
is_terminator(Py_UCS4 c)
{
    return c == '.' || c == '!' || c == '?' || c == ';' || c == 0x2026;
}

static inline int
is_closer(Py_UCS4 c)
{
    return c == '"' || c == '\'' || c == ')' || c == ']' || c == 0x201D || c == 0x2019 ||
           c == 0xBB;
}

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
    const unsigned char *blanks; /* bit c: character c normalises to blanks */
    Py_ssize_t blank_bits;
} Text;

/* A character as normalise() leaves it: its ASCII lower case, 0 for a blank, -1 for one
 * the kernel does not know. */
static inline int
fold(const Text *t, Py_UCS4 c)
{
    if (c < 128) {
        if (c >= 'A' && c <= 'Z') return (int)(c + 32);
        return is_alnum(c) ? (int)c : 0;
    }
    if ((Py_ssize_t)c < t->blank_bits && (t->blanks[c >> 3] >> (c & 7) & 1)) return 0;
    return -1;
}

/* Where _WESTERN_END's match starting at i ends; 0 when none starts there. Each round of
 * the closers' loop is deterministic (a closer, or one blank and a closer) and the loop is
 * greedy: it gives back whole rounds until a blank follows, so the match keeps the last
 * round after which a blank stands, then takes every blank. */
static int
sentence_end(const Text *t, Py_ssize_t i, Py_ssize_t *match_end)
{
    const int kind = t->kind;
    const void *data = t->data;
    const Py_ssize_t n = t->n;
    if (!is_terminator(PyUnicode_READ(kind, data, i))) return 0;
    Py_ssize_t p = i + 1, kept = -1;
    for (;;) {
        Py_UCS4 c = p < n ? PyUnicode_READ(kind, data, p) : 0;
        if (p < n && is_space(c)) kept = p;
        if (p < n && is_closer(c))
            p += 1;
        else if (p + 1 < n && is_space(c) && is_closer(PyUnicode_READ(kind, data, p + 1)))
            p += 2;
        else
            break;
    }
    if (kept < 0) return 0;
    Py_ssize_t r = kept;
    while (r < n && is_space(PyUnicode_READ(kind, data, r))) r++;
    *match_end = r;
    return 1;
}

static int
read_text(PyObject *text, Py_buffer *blanks, Text *t)
{
    t->kind = PyUnicode_KIND(text);
    t->data = PyUnicode_DATA(text);
    t->n = PyUnicode_GET_LENGTH(text);
    t->blanks = (const unsigned char *)blanks->buf;
    t->blank_bits = blanks->len * 8;
    return 0;
}

typedef struct {
    Py_ssize_t start, len, index;
} Sentence;

static int
by_length_then_index(const void *a, const void *b)
{
    const Sentence *x = (const Sentence *)a, *y = (const Sentence *)b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

static int
by_index(const void *a, const void *b)
{
    const Sentence *x = (const Sentence *)a, *y = (const Sentence *)b;
    return x->index < y->index ? -1 : (x->index > y->index);
}

/* normalise() of the text into `out` (room for t->n bytes): 0 done with *len_out bytes, 1 a
 * character the kernel does not know (Python answers). */
static int
normalise_into(const Text *t, unsigned char *out, Py_ssize_t *len_out)
{
    Py_ssize_t len = 0;
    int pending_space = 0;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        int c = fold(t, PyUnicode_READ(t->kind, t->data, i));
        if (c < 0) return 1;
        if (c == 0) {
            pending_space = 1;
            continue;
        }
        if (pending_space && len) out[len++] = ' ';
        pending_space = 0;
        out[len++] = (unsigned char)c;
    }
    *len_out = len;
    return 0;
}

static PyObject *
py_normalise(PyObject *self, PyObject *args)
{
    PyObject *text;
    Py_buffer blanks;
    if (!PyArg_ParseTuple(args, "Uy*", &text, &blanks)) return NULL;
    Text t;
    read_text(text, &blanks, &t);
    unsigned char *out = (unsigned char *)malloc((size_t)t.n + 1);
    if (out == NULL) {
        PyBuffer_Release(&blanks);
        return PyErr_NoMemory();
    }
    Py_ssize_t len = 0;
    int unknown = normalise_into(&t, out, &len);
    PyBuffer_Release(&blanks);
    PyObject *result;
    if (unknown) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        result = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, out, len);
    }
    free(out);
    return result;
}

/* ------------------------------------------------------------------ folded text blanked
 *
 * blanked(folded, is_blank): " ".join(folded.translate(_BLANKING).split()) of text already
 * NFKC-normalised and case-folded, where str.translate would look its table up for every
 * character. ASCII blanks all but letters and digits; any other character is asked of
 * is_blank(code) once a process (the answer is a fact of the code point and of the Python's
 * Unicode version, so the same function must be given every time) and kept in two bitmaps.
 * Every character str.split() takes for whitespace is a separator or a control, so blanked:
 * what is left needs no split, only its blanks collapsed.
 */

#define CODE_POINTS 0x110000
static unsigned char blank_asked[CODE_POINTS / 8], blank_said[CODE_POINTS / 8];

/* 1 when c blanks, 0 when it stays, -1 on an error from is_blank. */
static int
blanks_after_folding(Py_UCS4 c, PyObject *is_blank)
{
    if (c < 128) return !is_alnum(c);
    if (!(blank_asked[c >> 3] >> (c & 7) & 1)) {
        PyObject *code = PyLong_FromUnsignedLong((unsigned long)c);
        if (code == NULL) return -1;
        PyObject *answer = PyObject_CallOneArg(is_blank, code);
        Py_DECREF(code);
        if (answer == NULL) return -1;
        int blank = PyObject_IsTrue(answer);
        Py_DECREF(answer);
        if (blank < 0) return -1;
        if (blank) blank_said[c >> 3] |= (unsigned char)(1 << (c & 7));
        blank_asked[c >> 3] |= (unsigned char)(1 << (c & 7));
    }
    return blank_said[c >> 3] >> (c & 7) & 1;
}

static PyObject *
py_blanked(PyObject *self, PyObject *args)
{
    PyObject *text, *is_blank;
    if (!PyArg_ParseTuple(args, "UO", &text, &is_blank)) return NULL;
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_UCS4 *out = PyMem_Malloc(((size_t)n + 1) * sizeof(Py_UCS4));
    if (out == NULL) return PyErr_NoMemory();
    Py_ssize_t len = 0;
    int pending_space = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        int blank = blanks_after_folding(c, is_blank);
        if (blank < 0) {
            PyMem_Free(out);
            return NULL;
        }
        if (blank) {
            pending_space = 1;
            continue;
        }
        if (pending_space && len) out[len++] = ' ';
        pending_space = 0;
        out[len++] = c;
    }
    PyObject *result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, len);
    PyMem_Free(out);
    return result;
}

/* The `keep` longest sentences of a paragraph, normalised into `out` (room for t->n + 1
 * bytes) and listed in order in *found (grown as needed, *cap its room): 0 done with *count
 * of them, 1 a character the kernel does not know (Python answers), -1 out of memory. */
static int
sentences_of(const Text *t, Py_ssize_t keep, Py_ssize_t min_chars, unsigned char *out,
             Sentence **found, Py_ssize_t *cap, Py_ssize_t *count_out)
{
    const Py_ssize_t n = t->n;
    /* The normalised text: sentences end where _WESTERN_END puts a line break (or a line
     * break stood), words of letters and digits, lower case, one space apart. */
    Py_ssize_t len = 0, start = 0, index = 0, i = 0, count = 0;
    int pending_space = 0;
    for (;;) {
        int line_end = 0, c = 0;
        Py_ssize_t next = i + 1;
        if (i >= n) {
            line_end = 1;
        } else {
            Py_UCS4 cp = PyUnicode_READ(t->kind, t->data, i);
            if (cp == '\n') {
                line_end = 1;
            } else if (sentence_end(t, i, &next)) {
                line_end = 1; /* a terminator and its closers are punctuation: no words */
            } else if ((c = fold(t, cp)) < 0) {
                return 1;
            }
        }
        if (line_end) {
            if (len - start >= min_chars) {
                if (grow((void **)found, count, cap, sizeof(Sentence)) < 0) return -1;
                (*found)[count].start = start;
                (*found)[count].len = len - start;
                (*found)[count].index = index;
                count++;
            }
            index++;
            start = len;
            pending_space = 0;
            if (i >= n) break;
            i = next;
            continue;
        }
        if (c) {
            if (pending_space && len > start) out[len++] = ' ';
            pending_space = 0;
            out[len++] = (unsigned char)c;
        } else {
            pending_space = 1;
        }
        i = next;
    }
    if (count > keep) {
        qsort(*found, (size_t)count, sizeof(Sentence), by_length_then_index);
        count = keep;
        qsort(*found, (size_t)count, sizeof(Sentence), by_index);
    }
    *count_out = count;
    return 0;
}

static PyObject *
py_long_sentences(PyObject *self, PyObject *args)
{
    PyObject *text;
    Py_ssize_t keep, min_chars;
    Py_buffer blanks;
    if (!PyArg_ParseTuple(args, "Unny*", &text, &keep, &min_chars, &blanks)) return NULL;
    Text t;
    read_text(text, &blanks, &t);
    unsigned char *out = (unsigned char *)malloc((size_t)t.n + 1);
    Py_ssize_t cap = 16, count = 0;
    Sentence *found = (Sentence *)malloc(sizeof(Sentence) * (size_t)cap);
    PyObject *result = NULL;
    if (out == NULL || found == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int rc = sentences_of(&t, keep, min_chars, out, &found, &cap, &count);
    if (rc < 0) goto done;
    if (rc > 0) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    result = PyList_New(count);
    for (Py_ssize_t k = 0; result != NULL && k < count; k++) {
        PyObject *sentence =
            PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, out + found[k].start, found[k].len);
        if (sentence == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, k, sentence);
    }
done:
    PyBuffer_Release(&blanks);
    free(out);
    free(found);
    return result;
}

/* ------------------------------------------------------------------ shingle SimHash */

typedef struct {
    uint64_t hash;
    const unsigned char *text;
    Py_ssize_t len;
} Shingle;

/* Sets each shingle's hash: blake64 of its text, four at a time where the CPU can. */
static void
hash_shingles(Shingle *shingles, Py_ssize_t n)
{
#ifdef BLAKE_X4
    if (have_avx2()) {
        Py_ssize_t lanes[4];
        int filled = 0;
        for (Py_ssize_t k = 0; k < n; k++) {
            if (shingles[k].len > 128) { /* more than one block: blake64 alone */
                shingles[k].hash = blake64(shingles[k].text, (size_t)shingles[k].len);
                continue;
            }
            lanes[filled++] = k;
            if (filled < 4) continue;
            const unsigned char *data[4];
            size_t len[4];
            uint64_t out[4];
            for (int l = 0; l < 4; l++) {
                data[l] = shingles[lanes[l]].text;
                len[l] = (size_t)shingles[lanes[l]].len;
            }
            blake64_x4(data, len, out);
            for (int l = 0; l < 4; l++) shingles[lanes[l]].hash = out[l];
            filled = 0;
        }
        for (int l = 0; l < filled; l++) /* the last few */
            shingles[lanes[l]].hash =
                blake64(shingles[lanes[l]].text, (size_t)shingles[lanes[l]].len);
        return;
    }
#endif
    for (Py_ssize_t k = 0; k < n; k++)
        shingles[k].hash = blake64(shingles[k].text, (size_t)shingles[k].len);
}

/* _TOKEN's classes: \w (str.isalnum() or an underscore), and the ideographs, kana and
 * hangul that stand one to a token where a token starts. */
static inline int
is_word(Py_UCS4 c)
{
    return c < 128 ? is_alnum(c) || c == '_' : Py_UNICODE_ISALNUM(c);
}

static inline int
is_cjk(Py_UCS4 c)
{
    return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF);
}

/* The code point of valid UTF-8 at s (CPython made it) and its length in bytes. */
static inline Py_UCS4
utf8_at(const unsigned char *s, int *len)
{
    unsigned char c = s[0];
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    if (c < 0xE0) {
        *len = 2;
        return ((Py_UCS4)(c & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (c < 0xF0) {
        *len = 3;
        return ((Py_UCS4)(c & 0x0F) << 12) | ((Py_UCS4)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    *len = 4;
    return ((Py_UCS4)(c & 0x07) << 18) | ((Py_UCS4)(s[1] & 0x3F) << 12) |
           ((Py_UCS4)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

/* The SimHash of the `count` sentences (UTF-8 at texts[i], lens[i] bytes long): their word
 * shingles weighted by count (at most 255); 0 for none. A new int, NULL on error. */
static PyObject *
simhash_of(const unsigned char *const *texts, const Py_ssize_t *lens, Py_ssize_t count,
           Py_ssize_t words)
{
    Py_ssize_t total_len = 0;
    for (Py_ssize_t i = 0; i < count; i++) total_len += lens[i] + 1;
    /* Every shingle is at most `words` tokens joined by one space, written out in one buffer
     * that never moves: a token is in at most `words` shingles and brings at most one space
     * (tokens of CJK stand side by side), so twice `words` times the text is room for all. */
    size_t buf_cap = 2 * (size_t)total_len * (size_t)words + 16;
    unsigned char *buf = (unsigned char *)malloc(buf_cap);
    Py_ssize_t tok_cap = 64, shingle_cap = 64, nshingles = 0;
    Py_ssize_t *tok_start = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)tok_cap);
    Py_ssize_t *tok_len = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)tok_cap);
    Shingle *shingles = (Shingle *)malloc(sizeof(Shingle) * (size_t)shingle_cap);
    Py_ssize_t *table = NULL, *counts = NULL; /* the shingles alike, counted */
    PyObject *result = NULL;
    size_t used = 0;
    if (buf == NULL || tok_start == NULL || tok_len == NULL || shingles == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t n = lens[i], ntok = 0;
        const unsigned char *s = texts[i];
        for (Py_ssize_t p = 0; p < n;) { /* tokens: an ideograph where one starts, or \w+ */
            int width;
            Py_UCS4 c = utf8_at(s + p, &width);
            Py_ssize_t q = p + width;
            if (!is_cjk(c)) {
                if (!is_word(c)) {
                    p = q;
                    continue;
                }
                while (q < n) {
                    Py_UCS4 d = utf8_at(s + q, &width);
                    if (!is_word(d)) break;
                    q += width;
                }
            }
            if (ntok == tok_cap) {
                tok_cap *= 2;
                Py_ssize_t *a = (Py_ssize_t *)realloc(tok_start, sizeof(Py_ssize_t) * (size_t)tok_cap);
                if (a != NULL) tok_start = a;
                Py_ssize_t *b = (Py_ssize_t *)realloc(tok_len, sizeof(Py_ssize_t) * (size_t)tok_cap);
                if (b != NULL) tok_len = b;
                if (a == NULL || b == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
            }
            tok_start[ntok] = p;
            tok_len[ntok] = q - p;
            ntok++;
            p = q;
        }
        /* more tokens than a shingle: every window; else the whole sentence is one shingle */
        Py_ssize_t windows = ntok > words ? ntok - words + 1 : 1;
        Py_ssize_t width = ntok > words ? words : ntok;
        for (Py_ssize_t w = 0; w < windows; w++) {
            if (grow((void **)&shingles, nshingles, &shingle_cap, sizeof(Shingle)) < 0) goto done;
            size_t at = used, need = width > 0 ? (size_t)(width - 1) : 0;
            for (Py_ssize_t t = w; t < w + width; t++) need += (size_t)tok_len[t];
            if (used + need > buf_cap) { /* cannot happen: see buf_cap */
                PyErr_SetString(PyExc_RuntimeError, "shingle buffer overrun");
                goto done;
            }
            for (Py_ssize_t t = w; t < w + width; t++) {
                if (t > w) buf[used++] = ' ';
                memcpy(buf + used, s + tok_start[t], (size_t)tok_len[t]);
                used += (size_t)tok_len[t];
            }
            shingles[nshingles].hash = 0; /* hashed below, four at a time where it can */
            shingles[nshingles].text = buf + at; /* buf never moves: it was sized for all */
            shingles[nshingles].len = (Py_ssize_t)(used - at);
            nshingles++;
        }
    }
    hash_shingles(shingles, nshingles);
    if (nshingles == 0) {
        result = PyLong_FromLong(0);
        goto done;
    }
    /* Each distinct shingle weighs its count, capped at 255; bit b is set when the weight
     * of shingles having it is more than half of all. The shingles alike are counted in an
     * open-addressed table by hash (then text): the sums need no order. */
    size_t slots = 16;
    while (slots < 2 * (size_t)nshingles) slots <<= 1;
    table = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * slots);
    counts = (Py_ssize_t *)calloc((size_t)nshingles, sizeof(Py_ssize_t));
    if (table == NULL || counts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < slots; i++) table[i] = -1;
    for (Py_ssize_t k = 0; k < nshingles; k++) {
        const Shingle *x = &shingles[k];
        size_t i = (size_t)(x->hash ^ (x->hash >> 32)) & (slots - 1);
        for (;; i = (i + 1) & (slots - 1)) {
            Py_ssize_t j = table[i];
            if (j < 0) { /* a shingle not seen before */
                table[i] = k;
                counts[k] = 1;
                break;
            }
            const Shingle *y = &shingles[j];
            if (y->hash == x->hash && y->len == x->len &&
                memcmp(y->text, x->text, (size_t)x->len) == 0) {
                counts[j]++;
                break;
            }
        }
    }
    /* The weights are summed per bit eight bits at a time: spread[v] holds bit k of v in its
     * byte k, so that spread[byte] * weight adds the weight to the byte of each bit set, and
     * eight such bytes side by side take up to 255 of weight before they are added out. */
    static uint64_t spread[256];
    if (spread[255] == 0)
        for (int v = 0; v < 256; v++)
            for (int k = 0; k < 8; k++) spread[v] |= (uint64_t)((v >> k) & 1) << (8 * k);
    uint64_t ones[64], packed[8];
    uint64_t total = 0, pending = 0;
    memset(ones, 0, sizeof(ones));
    memset(packed, 0, sizeof(packed));
    for (Py_ssize_t k = 0; k <= nshingles; k++) {
        uint64_t weight = 0;
        if (k < nshingles) {
            if (!counts[k]) continue;
            weight = (uint64_t)counts[k] < 255 ? (uint64_t)counts[k] : 255;
        }
        if (pending + weight > 255 || k == nshingles) { /* the bytes full, or the end */
            for (int i = 0; i < 8; i++) {
                for (int b = 0; b < 8; b++) ones[8 * i + b] += (packed[i] >> (8 * b)) & 0xFF;
                packed[i] = 0;
            }
            pending = 0;
            if (k == nshingles) break;
        }
        uint64_t h = shingles[k].hash;
        for (int i = 0; i < 8; i++) packed[i] += spread[(h >> (8 * i)) & 0xFF] * weight;
        pending += weight;
        total += weight;
    }
    uint64_t value = 0;
    for (int b = 0; b < 64; b++)
        if (2 * ones[b] > total) value |= 1ULL << b;
    result = PyLong_FromUnsignedLongLong(value);
done:
    free(buf);
    free(tok_start);
    free(tok_len);
    free(shingles);
    free(table);
    free(counts);
    return result;
}


static PyObject *
py_shingle_simhash(PyObject *self, PyObject *args)
{
    PyObject *sentences;
    Py_ssize_t words;
    if (!PyArg_ParseTuple(args, "On", &sentences, &words)) return NULL;
    if (words < 1) {
        PyErr_SetString(PyExc_ValueError, "words must be at least 1");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(sentences, "shingle_simhash takes a sequence of str");
    if (seq == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    const unsigned char **texts =
        (const unsigned char **)malloc(sizeof(const unsigned char *) * (size_t)(count + 1));
    Py_ssize_t *lens = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(count + 1));
    PyObject *result = NULL;
    if (texts == NULL || lens == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        texts[i] = (const unsigned char *)PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(seq, i),
                                                                  &lens[i]);
        if (texts[i] == NULL) goto done;
    }
    result = simhash_of(texts, lens, count, words);
done:
    free(texts);
    free(lens);
    Py_DECREF(seq);
    return result;
}

/* ------------------------------------------------------------------ term SimHashes
 *
 * term_simhash and shape_simhash of visdup.structure.fingerprint over a term's flat
 * preorder (labels, marks, sizes): the same feature strings, hashed and weighed the same
 * (a feature's weight summed over its nodes: SimHash's counters are sums, so features
 * repeated need no merging first; the shape's features count once each, so those are
 * made distinct). None when a mark does not fit 64 bits: Python answers then.
 */

typedef struct {
    unsigned char *data;
    size_t len, cap;
} Buf;

static int
buf_room(Buf *b, size_t n)
{
    if (b->len + n <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    unsigned char *grown = (unsigned char *)realloc(b->data, cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = grown;
    b->cap = cap;
    return 0;
}

static int
buf_put(Buf *b, const void *s, size_t n)
{
    if (buf_room(b, n) < 0) return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

typedef struct {
    Py_ssize_t n;
    const char **label; /* UTF-8 of each label, borrowed from the str objects */
    Py_ssize_t *label_len;
    long long *mark;
    Py_ssize_t *size;
    Py_ssize_t *ends, *path; /* the walk's open ancestors: their subtree ends, their nodes */
    PyObject *labels_seq, *marks_seq, *sizes_seq;
} Flat;

static void
flat_free(Flat *f)
{
    free(f->label);
    free(f->label_len);
    free(f->mark);
    free(f->size);
    free(f->ends);
    free(f->path);
    Py_XDECREF(f->labels_seq);
    Py_XDECREF(f->marks_seq);
    Py_XDECREF(f->sizes_seq);
}

/* 0 read, 1 a mark past 64 bits (Python answers), -1 error. Sizes are checked as the
 * Python walk would meet them: a subtree never ends past the term. */
static int
flat_read(PyObject *labels, PyObject *marks, PyObject *sizes, Flat *f)
{
    memset(f, 0, sizeof(*f));
    f->labels_seq = PySequence_Fast(labels, "labels must be a sequence");
    f->marks_seq = f->labels_seq ? PySequence_Fast(marks, "marks must be a sequence") : NULL;
    f->sizes_seq = f->marks_seq ? PySequence_Fast(sizes, "sizes must be a sequence") : NULL;
    if (f->sizes_seq == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f->labels_seq);
    if (PySequence_Fast_GET_SIZE(f->marks_seq) != n || PySequence_Fast_GET_SIZE(f->sizes_seq) != n) {
        PyErr_SetString(PyExc_ValueError, "labels, marks and sizes differ in length");
        return -1;
    }
    f->n = n;
    f->label = (const char **)malloc(sizeof(char *) * (size_t)(n + 1));
    f->label_len = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    f->mark = (long long *)malloc(sizeof(long long) * (size_t)(n + 1));
    f->size = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    f->ends = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    f->path = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    if (!f->label || !f->label_len || !f->mark || !f->size || !f->ends || !f->path) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        f->label[i] = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(f->labels_seq, i),
                                              &f->label_len[i]);
        if (f->label[i] == NULL) return -1;
        f->mark[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f->marks_seq, i));
        if (f->mark[i] == -1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
            PyErr_Clear();
            return 1;
        }
        if (f->mark[i] > (1LL << 40) || f->mark[i] < -(1LL << 40)) return 1;
        f->size[i] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(f->sizes_seq, i));
        if (f->size[i] == -1 && PyErr_Occurred()) return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (f->size[i] < 1 || f->size[i] > n - i) {
            PyErr_SetString(PyExc_ValueError, "sizes: not a preorder of subtree sizes");
            return -1;
        }
    }
    return 0;
}

/* flat_read for a SimHash call: 1 when read, else 0 with *result what the call returns (None
 * for a mark past 64 bits, NULL for an error). */
static int
flat_open(PyObject *labels, PyObject *marks, PyObject *sizes, Flat *f, PyObject **result)
{
    int rc = flat_read(labels, marks, sizes, f);
    if (rc > 0) {
        Py_INCREF(Py_None);
        *result = Py_None;
    }
    return rc == 0;
}

/* A node's token: its label, and "*b" with its mark's bucket unless the mark is 1. */
static int
put_token(Buf *b, const Flat *f, Py_ssize_t i)
{
    if (buf_put(b, f->label[i], (size_t)f->label_len[i]) < 0) return -1;
    long long m = f->mark[i];
    if (m == 1) return 0;
    unsigned long long x = m - 1 < 0 ? (unsigned long long)(1 - m) : (unsigned long long)(m - 1);
    int bits = 0;
    while (x) {
        bits++;
        x >>= 1;
    }
    char digits[8];
    int len = snprintf(digits, sizeof(digits), "*%d", bits);
    return buf_put(b, digits, (size_t)len);
}

/* "p:a/b/x": node i's label under the labels of its last `ancestors` open ancestors. */
static int
put_path(Buf *b, const Flat *f, Py_ssize_t depth, Py_ssize_t ancestors, Py_ssize_t i)
{
    if (buf_put(b, "p:", 2) < 0) return -1;
    for (Py_ssize_t k = depth > ancestors ? depth - ancestors : 0; k < depth; k++) {
        Py_ssize_t a = f->path[k];
        if (buf_put(b, f->label[a], (size_t)f->label_len[a]) < 0 || buf_put(b, "/", 1) < 0)
            return -1;
    }
    return buf_put(b, f->label[i], (size_t)f->label_len[i]);
}

/* Opens node i (its ancestors that ended before it closed first); the open depth. */
static Py_ssize_t
walk_to(Flat *f, Py_ssize_t depth, Py_ssize_t i)
{
    while (depth && f->ends[depth - 1] <= i) depth--;
    return depth;
}

static uint64_t
majority(const long long ones[64], long long total)
{
    uint64_t value = 0;
    for (int b = 0; b < 64; b++)
        if (2 * ones[b] > total) value |= 1ULL << b;
    return value;
}

static void
count_bits(long long ones[64], uint64_t h, long long weight)
{
    for (int b = 0; b < 64; b++)
        if (h >> b & 1) ones[b] += weight;
}

typedef struct {
    uint64_t hash;
    size_t start, len;
} Feature;

/* Sets the hash of each feature written in b (its bytes at start, len long): after the walk
 * that wrote them, when the buffer has stopped moving, four at a time where the CPU can.
 * -1 out of memory. */
static int
hash_features(const Buf *b, Feature *features, Py_ssize_t count)
{
    Shingle *pieces = (Shingle *)malloc(sizeof(Shingle) * (size_t)(count + 1));
    if (pieces == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        pieces[k].text = b->data + features[k].start;
        pieces[k].len = (Py_ssize_t)features[k].len;
    }
    hash_shingles(pieces, count);
    for (Py_ssize_t k = 0; k < count; k++) features[k].hash = pieces[k].hash;
    free(pieces);
    return 0;
}

static PyObject *
py_term_simhash(PyObject *self, PyObject *args)
{
    PyObject *labels, *marks, *sizes;
    Py_ssize_t path_depth;
    long long max_weight;
    if (!PyArg_ParseTuple(args, "OOOnL", &labels, &marks, &sizes, &path_depth, &max_weight))
        return NULL;
    Flat f;
    Buf b = {NULL, 0, 0};
    PyObject *result = NULL;
    Feature *features = NULL;
    long long *weights = NULL;
    Py_ssize_t count = 0;
    if (!flat_open(labels, marks, sizes, &f, &result)) goto done;
    /* two features a node at most: its path, and its children's tokens */
    size_t room = (size_t)(2 * f.n + 1);
    features = (Feature *)malloc(sizeof(Feature) * room);
    weights = (long long *)malloc(sizeof(long long) * room);
    if (!features || !weights) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t depth = 0;
    for (Py_ssize_t i = 0; i < f.n; i++) {
        depth = walk_to(&f, depth, i);
        long long weight = f.mark[i] < max_weight ? f.mark[i] : max_weight;
        size_t start = b.len; /* p:a/b/c/x, node x under its last path_depth ancestors */
        if (put_path(&b, &f, depth, path_depth, i) < 0) goto done;
        features[count].start = start;
        features[count].len = b.len - start;
        weights[count++] = weight;
        Py_ssize_t end = i + f.size[i];
        if (end > i + 1) { /* s:x*b(y,z*b), node x with its children's tokens in order */
            start = b.len;
            if (buf_put(&b, "s:", 2) < 0 || put_token(&b, &f, i) < 0 || buf_put(&b, "(", 1) < 0)
                goto done;
            for (Py_ssize_t j = i + 1; j < end; j += f.size[j]) {
                if ((j > i + 1 && buf_put(&b, ",", 1) < 0) || put_token(&b, &f, j) < 0) goto done;
            }
            if (buf_put(&b, ")", 1) < 0) goto done;
            features[count].start = start;
            features[count].len = b.len - start;
            weights[count++] = weight;
        }
        f.ends[depth] = end;
        f.path[depth++] = i;
    }
    if (hash_features(&b, features, count) < 0) goto done;
    long long ones[64] = {0}, total = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        count_bits(ones, features[k].hash, weights[k]);
        total += weights[k];
    }
    result = PyLong_FromUnsignedLongLong(majority(ones, total));
done:
    flat_free(&f);
    free(b.data);
    free(features);
    free(weights);
    return result;
}


static const unsigned char *feature_text; /* the buffer features are sorted against */

static int
by_feature(const void *x, const void *y)
{
    const Feature *a = (const Feature *)x, *b = (const Feature *)y;
    if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(feature_text + a->start, feature_text + b->start, n);
    if (c) return c;
    return a->len < b->len ? -1 : (a->len > b->len);
}

static PyObject *
py_shape_simhash(PyObject *self, PyObject *args)
{
    PyObject *labels, *marks, *sizes;
    if (!PyArg_ParseTuple(args, "OOO", &labels, &marks, &sizes)) return NULL;
    Flat f;
    Buf b = {NULL, 0, 0};
    PyObject *result = NULL;
    Feature *features = NULL;
    Py_ssize_t count = 0;
    if (!flat_open(labels, marks, sizes, &f, &result)) goto done;
    features = (Feature *)malloc(sizeof(Feature) * (size_t)(2 * f.n + 1));
    if (features == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t depth = 0;
    for (Py_ssize_t i = 0; i < f.n; i++) {
        depth = walk_to(&f, depth, i);
        size_t start = b.len; /* p:a/b/x, two ancestors */
        if (put_path(&b, &f, depth, 2, i) < 0) goto done;
        features[count].start = start;
        features[count].len = b.len - start;
        count++;
        Py_ssize_t end = i + f.size[i];
        if (end > i + 1) { /* s:x(y,z), the runs of its children's labels */
            start = b.len;
            if (buf_put(&b, "s:", 2) < 0 ||
                buf_put(&b, f.label[i], (size_t)f.label_len[i]) < 0 || buf_put(&b, "(", 1) < 0)
                goto done;
            Py_ssize_t last = -1;
            for (Py_ssize_t j = i + 1; j < end; j += f.size[j]) {
                if (last >= 0 && f.label_len[last] == f.label_len[j] &&
                    memcmp(f.label[last], f.label[j], (size_t)f.label_len[j]) == 0)
                    continue;
                if ((last >= 0 && buf_put(&b, ",", 1) < 0) ||
                    buf_put(&b, f.label[j], (size_t)f.label_len[j]) < 0)
                    goto done;
                last = j;
            }
            if (buf_put(&b, ")", 1) < 0) goto done;
            features[count].start = start;
            features[count].len = b.len - start;
            count++;
        }
        f.ends[depth] = end;
        f.path[depth++] = i;
    }
    if (hash_features(&b, features, count) < 0) goto done;
    feature_text = b.data; /* the GIL is held: no other caller sorts meanwhile */
    qsort(features, (size_t)count, sizeof(Feature), by_feature);
    long long ones[64] = {0}, total = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        if (k > 0 && by_feature(&features[k - 1], &features[k]) == 0) continue;
        count_bits(ones, features[k].hash, 1);
        total += 1;
    }
    result = PyLong_FromUnsignedLongLong(majority(ones, total));
done:
    flat_free(&f);
    free(b.data);
    free(features);
    return result;
}

/* ------------------------------------------------------------------ content layers
 *
 * layers(blocks, keep, min_chars, blanks, words, normalise, long_sentences): what
 * textprint.content_print reads of structure_tree(blocks), without the tree: the document's
 * fingerprint, the sections' and the paragraphs' (in the tree's preorder, which is the
 * order the blocks made them), each long sentence's hash, and the SimHash of those
 * sentences' shingles. A section is hashed when it closes: its paragraphs come before its
 * first subsection, and a subsection closes before its next sibling opens, so its
 * children's fingerprints are written in the tree's order. Text the kernel does not know
 * goes to the Python functions given (`normalise(text)`, `long_sentences(text, keep)`).
 * None for a block that is not (kind, level, str) with an int or None level on a heading:
 * Python answers those.
 */

typedef struct {
    long level;
    Py_ssize_t slot; /* its place among the sections; -1 for the document */
    Buf parts;       /* normalise(heading), then "\x1f" and each child's fingerprint in hex */
} OpenSection;

typedef struct {
    uint64_t *v;
    Py_ssize_t n, cap;
} U64s;

static int
u64_put(U64s *a, uint64_t x)
{
    if (grow((void **)&a->v, a->n, &a->cap, sizeof(uint64_t)) < 0) return -1;
    a->v[a->n++] = x;
    return 0;
}

/* "\x1f" and the fingerprint as f"{fp:016x}" writes it. */
static int
put_hex(Buf *b, uint64_t fp)
{
    static const char digits[] = "0123456789abcdef";
    char hex[17];
    hex[0] = 0x1f;
    for (int k = 0; k < 16; k++) hex[1 + k] = digits[(fp >> (60 - 4 * k)) & 0xF];
    return buf_put(b, hex, sizeof(hex));
}

/* Room for n more bytes in b (its length unchanged); -1 out of memory. */

/* The UTF-8 of a str the Python fallback gave, appended to b; -1 on error. */
static int
put_str(Buf *b, PyObject *text)
{
    Py_ssize_t n;
    const char *s = PyUnicode_Check(text) ? PyUnicode_AsUTF8AndSize(text, &n) : NULL;
    if (s == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "layers: str expected");
        return -1;
    }
    return buf_put(b, s, (size_t)n);
}

/* normalise(text) appended to b; -1 on error. */
static int
put_normalised(Buf *b, PyObject *text, Py_buffer *blanks, PyObject *fallback)
{
    Text t;
    read_text(text, blanks, &t);
    if (buf_room(b, (size_t)t.n + 1) < 0) return -1;
    Py_ssize_t len = 0;
    if (normalise_into(&t, b->data + b->len, &len) == 0) {
        b->len += (size_t)len;
        return 0;
    }
    PyObject *value = PyObject_CallOneArg(fallback, text);
    if (value == NULL) return -1;
    int rc = put_str(b, value);
    Py_DECREF(value);
    return rc;
}

/* Closes the innermost open section: its fingerprint to its slot and to its parent's parts. */
static int
close_section(OpenSection *open, Py_ssize_t *nopen, U64s *sections)
{
    OpenSection *top = &open[*nopen - 1];
    uint64_t fp = blake64(top->parts.data ? top->parts.data : (const unsigned char *)"",
                          top->parts.len);
    sections->v[top->slot] = fp;
    free(top->parts.data);
    top->parts.data = NULL;
    (*nopen)--;
    return put_hex(&open[*nopen - 1].parts, fp);
}

static PyObject *
tuple_of(const U64s *a)
{
    PyObject *t = PyTuple_New(a->n);
    for (Py_ssize_t k = 0; t != NULL && k < a->n; k++) {
        PyObject *v = PyLong_FromUnsignedLongLong(a->v[k]);
        if (v == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

static PyObject *
py_layers(PyObject *self, PyObject *args)
{
    PyObject *blocks, *normalise_py, *long_py;
    Py_ssize_t keep, min_chars, words;
    Py_buffer blanks;
    if (!PyArg_ParseTuple(args, "Onny*nOO", &blocks, &keep, &min_chars, &blanks, &words,
                          &normalise_py, &long_py))
        return NULL;
    PyObject *result = NULL, *seq = NULL;
    OpenSection *open = NULL;
    Py_ssize_t nopen = 0, open_cap = 8;
    U64s sections = {NULL, 0, 0}, paragraphs = {NULL, 0, 0}, hashes = {NULL, 0, 0};
    Buf scratch = {NULL, 0, 0}, joined = {NULL, 0, 0}, store = {NULL, 0, 0};
    Sentence *found = NULL;
    Py_ssize_t found_cap = 16, *starts = NULL, *lens = NULL, nsent = 0;
    Py_ssize_t starts_cap = 0, lens_cap = 0;
    const unsigned char **texts = NULL;
    if (words < 1 || keep < 0) {
        PyErr_SetString(PyExc_ValueError, "layers: words must be at least 1, keep at least 0");
        goto done;
    }
    seq = PySequence_Fast(blocks, "layers takes a sequence of blocks");
    if (seq == NULL) goto done;
    open = (OpenSection *)malloc(sizeof(OpenSection) * (size_t)open_cap);
    found = (Sentence *)malloc(sizeof(Sentence) * (size_t)found_cap);
    if (open == NULL || found == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    open[0].level = 0; /* the document: never closed by a heading */
    open[0].slot = -1;
    open[0].parts = (Buf){NULL, 0, 0};
    nopen = 1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) goto python;
        PyObject *kind = PyTuple_GET_ITEM(item, 0), *level_obj = PyTuple_GET_ITEM(item, 1);
        PyObject *text = PyTuple_GET_ITEM(item, 2);
        if (!PyUnicode_Check(text)) goto python;
        int heading = PyUnicode_Check(kind) && PyUnicode_CompareWithASCIIString(kind, "heading") == 0;
        if (heading) { /* max(1, min(6, level or 1)) */
            long level = 1;
            if (PyLong_Check(level_obj)) {
                int overflow = 0;
                long v = PyLong_AsLongAndOverflow(level_obj, &overflow);
                if (v == -1 && PyErr_Occurred()) goto done;
                if (overflow) v = overflow > 0 ? 6 : 1;
                level = v == 0 ? 1 : v < 1 ? 1 : v > 6 ? 6 : v;
            } else if (level_obj != Py_None) {
                goto python;
            }
            while (open[nopen - 1].level >= level && nopen > 1)
                if (close_section(open, &nopen, &sections) < 0) goto done;
            if (grow((void **)&open, nopen, &open_cap, sizeof(OpenSection)) < 0) goto done;
            OpenSection *section = &open[nopen++];
            section->level = level;
            section->slot = sections.n;
            section->parts = (Buf){NULL, 0, 0};
            if (u64_put(&sections, 0) < 0) goto done;
            if (put_normalised(&section->parts, text, &blanks, normalise_py) < 0) goto done;
            continue;
        }
        /* a paragraph: its long sentences, when it has any */
        Text t;
        read_text(text, &blanks, &t);
        scratch.len = 0;
        if (buf_room(&scratch, (size_t)t.n + 1) < 0) goto done;
        Py_ssize_t nfound = 0;
        int rc = sentences_of(&t, keep, min_chars, scratch.data, &found, &found_cap, &nfound);
        if (rc < 0) goto done;
        Py_ssize_t first = nsent;
        if (rc == 0) {
            for (Py_ssize_t k = 0; k < nfound; k++) {
                if (grow((void **)&starts, nsent, &starts_cap, sizeof(Py_ssize_t)) < 0 ||
                    grow((void **)&lens, nsent, &lens_cap, sizeof(Py_ssize_t)) < 0)
                    goto done;
                starts[nsent] = (Py_ssize_t)store.len;
                lens[nsent] = found[k].len;
                if (buf_put(&store, scratch.data + found[k].start, (size_t)found[k].len) < 0)
                    goto done;
                nsent++;
            }
        } else { /* a letter outside ASCII: Python's long sentences */
            PyObject *list = PyObject_CallFunction(long_py, "On", text, keep);
            if (list == NULL) goto done;
            PyObject *fast = PySequence_Fast(list, "long_sentences gives a list");
            Py_DECREF(list);
            if (fast == NULL) goto done;
            for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(fast); k++) {
                if (grow((void **)&starts, nsent, &starts_cap, sizeof(Py_ssize_t)) < 0 ||
                    grow((void **)&lens, nsent, &lens_cap, sizeof(Py_ssize_t)) < 0) {
                    Py_DECREF(fast);
                    goto done;
                }
                size_t at = store.len;
                if (put_str(&store, PySequence_Fast_GET_ITEM(fast, k)) < 0) {
                    Py_DECREF(fast);
                    goto done;
                }
                starts[nsent] = (Py_ssize_t)at;
                lens[nsent] = (Py_ssize_t)(store.len - at);
                nsent++;
            }
            Py_DECREF(fast);
        }
        if (nsent == first) continue;
        joined.len = 0; /* the paragraph hashes its sentences joined by line breaks */
        for (Py_ssize_t k = first; k < nsent; k++) {
            if (k > first && buf_put(&joined, "\n", 1) < 0) goto done;
            if (buf_put(&joined, store.data + starts[k], (size_t)lens[k]) < 0) goto done;
            if (u64_put(&hashes, blake64(store.data + starts[k], (size_t)lens[k])) < 0) goto done;
        }
        uint64_t fp = blake64(joined.data, joined.len);
        if (u64_put(&paragraphs, fp) < 0 || put_hex(&open[nopen - 1].parts, fp) < 0) goto done;
    }
    while (nopen > 1)
        if (close_section(open, &nopen, &sections) < 0) goto done;
    uint64_t document = blake64(open[0].parts.data ? open[0].parts.data : (const unsigned char *)"",
                                open[0].parts.len);
    texts = (const unsigned char **)calloc((size_t)(nsent + 1), sizeof(const unsigned char *));
    if (texts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < nsent; k++) texts[k] = store.data + starts[k];
    PyObject *simhash = simhash_of(texts, lens, nsent, words);
    if (simhash == NULL) goto done;
    PyObject *parts[5] = {simhash, PyLong_FromUnsignedLongLong(nsent ? document : 0),
                          tuple_of(&sections), tuple_of(&paragraphs), tuple_of(&hashes)};
    if (parts[1] && parts[2] && parts[3] && parts[4])
        result = PyTuple_Pack(5, parts[1], parts[2], parts[3], parts[4], parts[0]);
    for (int k = 0; k < 5; k++) Py_XDECREF(parts[k]);
    goto done;
python:
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&blanks);
    Py_XDECREF(seq);
    for (Py_ssize_t k = 0; open != NULL && k < nopen; k++) free(open[k].parts.data);
    free(open);
    free(sections.v);
    free(paragraphs.v);
    free(hashes.v);
    free(scratch.data);
    free(joined.data);
    free(store.data);
    free(found);
    free(starts);
    free(lens);
    free(texts);
    return result;
}

/* ------------------------------------------------------------------ holding */

/* holding(texts, chars): [i for i, t in enumerate(texts) if t and any(c in t for c in
 * chars)], for a list of str and None: the template step's texts that may open with a
 * caption, found without a Python step per text. */
static PyObject *
py_holding(PyObject *self, PyObject *args)
{
    PyObject *texts, *chars;
    if (!PyArg_ParseTuple(args, "O!U", &PyList_Type, &texts, &chars)) return NULL;
    const Py_ssize_t nchars = PyUnicode_GET_LENGTH(chars);
    Py_UCS4 wanted[8];
    if (nchars > 8) {
        PyErr_SetString(PyExc_ValueError, "holding() looks for 8 characters at most");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < nchars; k++) wanted[k] = PyUnicode_READ_CHAR(chars, k);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(texts); i++) {
        PyObject *t = PyList_GET_ITEM(texts, i);
        if (!PyUnicode_Check(t)) continue;
        const Py_ssize_t n = PyUnicode_GET_LENGTH(t);
        for (Py_ssize_t k = 0; k < nchars && n > 0; k++) {
            Py_ssize_t at = PyUnicode_FindChar(t, wanted[k], 0, n, 1);
            if (at == -2) {
                Py_DECREF(out);
                return NULL;
            }
            if (at >= 0) {
                PyObject *index = PyLong_FromSsize_t(i);
                if (index == NULL || PyList_Append(out, index) < 0) {
                    Py_XDECREF(index);
                    Py_DECREF(out);
                    return NULL;
                }
                Py_DECREF(index);
                break;
            }
        }
    }
    return out;
}

/* ------------------------------------------------------------------ numbers */

/* textprint._NUMBERS.sub("0", text), read as Python's re reads that pattern on a str:
 * \d is a Unicode decimal digit, a word character is alphanumeric or "_", and the scan
 * resumes after each match. At a position holding a decimal digit or one of a-f:
 * - a run of ASCII hex digits [0-9a-f], at least 6 long, that holds an ASCII digit, starts
 *   at a word boundary and ends at one, is one number (a longer hex run never ends at a
 *   boundary inside itself, so only the whole run can match);
 * - else a run of decimal digits is one;
 * - else the scan moves on a character. */
static inline int
is_hex(Py_UCS4 c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* \d of Python's re: a decimal digit of any script, read from Unicode's tables past ASCII. */
static inline int
is_decimal(Py_UCS4 c)
{
    return c < 128 ? (c >= '0' && c <= '9') : Py_UNICODE_ISDECIMAL(c);
}

static PyObject *
py_numbers_zeroed(PyObject *self, PyObject *arg)
{
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "numbers_zeroed() takes a str");
        return NULL;
    }
    if (PyUnicode_READY(arg) < 0) return NULL;
    const int kind = PyUnicode_KIND(arg);
    const void *data = PyUnicode_DATA(arg);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    Py_UCS4 *out = NULL;
    Py_ssize_t len = 0, copied = 0; /* out holds the text before `copied`, rewritten */
    Py_ssize_t i = 0;
    while (i < n) {
        const Py_UCS4 c = PyUnicode_READ(kind, data, i);
        const int decimal = is_decimal(c);
        if (!decimal && !(c >= 'a' && c <= 'f')) {
            i++;
            continue;
        }
        Py_ssize_t end = i;
        if (is_hex(c) && (i == 0 || !is_word(PyUnicode_READ(kind, data, i - 1)))) {
            Py_ssize_t j = i;
            int digit = 0;
            while (j < n) {
                const Py_UCS4 h = PyUnicode_READ(kind, data, j);
                if (!is_hex(h)) break;
                digit |= h <= '9';
                j++;
            }
            if (digit && j - i >= 6 && (j == n || !is_word(PyUnicode_READ(kind, data, j))))
                end = j;
        }
        if (end == i && decimal) {
            end = i + 1;
            while (end < n && is_decimal(PyUnicode_READ(kind, data, end))) end++;
        }
        if (end == i) {
            i++;
            continue;
        }
        if (out == NULL) {
            out = (Py_UCS4 *)PyMem_Malloc((size_t)n * sizeof(Py_UCS4));
            if (out == NULL) return PyErr_NoMemory();
        }
        for (; copied < i; copied++) out[len++] = PyUnicode_READ(kind, data, copied);
        out[len++] = '0';
        copied = i = end;
    }
    if (out == NULL) {
        Py_INCREF(arg);
        return arg;
    }
    for (; copied < n; copied++) out[len++] = PyUnicode_READ(kind, data, copied);
    PyObject *result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, len);
    PyMem_Free(out);
    return result;
}

/* ------------------------------------------------------------------ content bounds
 *
 * A print summary packed (visdup.dedup.prints.PrintSummary.packed): four 64-bit words
 * (document, long sentences, paragraphs, listing), then the sentence hashes sorted, then the
 * paragraph hashes sorted, native byte order. A layer's multiset intersection, what
 * prints._shared counts, is a merge of the two sorted runs: equal hashes pair off one by one,
 * so a hash both repeat counts min(ka, kb) times.
 */

typedef struct {
    uint64_t document, sentences, paragraphs, listing;
    const uint64_t *s, *p;
} Packed;

/* A packed summary read in place: 0; 1 when its bytes are not 8-aligned; -1 on error. */
static int
unpack_summary(PyObject *obj, Packed *out)
{
    if (!PyBytes_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "content_bounds: a packed summary is bytes");
        return -1;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(obj);
    const char *raw = PyBytes_AS_STRING(obj);
    uint64_t head[4];
    if (n < (Py_ssize_t)sizeof head || n % 8 != 0) {
        PyErr_SetString(PyExc_ValueError, "content_bounds: not a packed summary");
        return -1;
    }
    if ((uintptr_t)raw % 8 != 0) return 1; /* read in place only: Python takes it */
    memcpy(head, raw, sizeof head);
    const uint64_t words = (uint64_t)(n / 8) - 4;
    if (head[1] > words || head[2] > words - head[1]) {
        PyErr_SetString(PyExc_ValueError, "content_bounds: a summary's layers are cut short");
        return -1;
    }
    out->document = head[0];
    out->sentences = head[1];
    out->paragraphs = head[2];
    out->listing = head[3];
    out->s = (const uint64_t *)raw + 4;
    out->p = out->s + head[1];
    return 0;
}

static uint64_t
common_count(const uint64_t *a, uint64_t na, const uint64_t *b, uint64_t nb)
{
    uint64_t i = 0, j = 0, n = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j]) {
            i++;
        }
        else if (a[i] > b[j]) {
            j++;
        }
        else {
            n++;
            i++;
            j++;
        }
    }
    return n;
}

/* prints.content_bound, with Python's int true division (exact for these small ints). */
static double
content_bound_of(const Packed *a, const Packed *b)
{
    const uint64_t na = a->sentences, nb = b->sentences;
    if (!na || !nb) return 0.0;
    if (a->document == b->document) return 1.0;
    const uint64_t s = common_count(a->s, na, b->s, nb);
    if (!s) return 0.0;
    double bound = (a->listing || b->listing) ? (double)(2 * s) / (double)(na + nb)
                                              : (double)s / (double)(na < nb ? na : nb);
    const uint64_t pa = a->paragraphs, pb = b->paragraphs;
    if (pa && pb) {
        uint64_t least = s < pa ? s : pa;
        least = least < pb ? least : pb;
        if ((double)(2 * least) / (double)(pa + pb) > bound) {
            const uint64_t c = common_count(a->p, pa, b->p, pb);
            const double dice = (double)(2 * c) / (double)(pa + pb);
            if (dice > bound) bound = dice;
        }
    }
    return bound;
}

static PyObject *
py_content_bounds(PyObject *self, PyObject *args)
{
    PyObject *mine_obj, *others;
    if (!PyArg_ParseTuple(args, "OO!:content_bounds", &mine_obj, &PyList_Type, &others)) {
        return NULL;
    }
    Packed mine;
    int rc = unpack_summary(mine_obj, &mine);
    if (rc != 0) {
        if (rc < 0) return NULL;
        Py_RETURN_NONE;
    }
    const Py_ssize_t n = PyList_GET_SIZE(others);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        Packed other;
        rc = unpack_summary(PyList_GET_ITEM(others, k), &other);
        if (rc != 0) {
            Py_DECREF(out);
            if (rc < 0) return NULL;
            Py_RETURN_NONE;
        }
        PyObject *value = PyFloat_FromDouble(content_bound_of(&mine, &other));
        if (value == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, value);
    }
    return out;
}

/* ------------------------------------------------------------------ nearest fingerprints
 *
 * near_keys(fps, fp, k, limit, keys_of): visdup.index.memory.MemoryIndex._query's answer from
 * its scan (the distinct fingerprints, a buffer of 64-bit words): the keys of the
 * fingerprints within k bits of fp as (key, fingerprint, distance), nearest first, then by
 * key, at most ``limit`` of them (-1: all). Where the limit falls inside a distance, every
 * fingerprint at that distance is read before the keys are cut, so the answer is the one the
 * whole list gives. ``keys_of`` maps each fingerprint to a dict of its keys. None for a key
 * past 64 bits: Python answers then.
 */

typedef struct {
    uint64_t fp;
    int dist;
} NearHit;

typedef struct {
    long long key;
    uint64_t fp;
    int dist;
} NearKey;

static int
near_hit_order(const void *a, const void *b)
{
    const NearHit *x = a, *y = b;
    if (x->dist != y->dist) return x->dist < y->dist ? -1 : 1;
    return x->fp < y->fp ? -1 : x->fp > y->fp;
}

static int
near_key_order(const void *a, const void *b)
{
    const NearKey *x = a, *y = b;
    if (x->dist != y->dist) return x->dist < y->dist ? -1 : 1;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->fp < y->fp ? -1 : x->fp > y->fp;
}

/* each fingerprint's distance to fp, in bits: with the CPU's popcnt where it has one (a
 * build for any x86-64 counts bits with a dozen instructions a word otherwise) */
static void
near_distances_generic(const uint64_t *fps, Py_ssize_t n, uint64_t fp, unsigned char *out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = (unsigned char)__builtin_popcountll(fps[i] ^ fp);
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target("popcnt"))) static void
near_distances_popcnt(const uint64_t *fps, Py_ssize_t n, uint64_t fp, unsigned char *out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = (unsigned char)__builtin_popcountll(fps[i] ^ fp);
    }
}

static int
have_popcnt(void)
{
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("popcnt") ? 1 : 0;
    }
    return known;
}
#endif

static void
near_distances(const uint64_t *fps, Py_ssize_t n, uint64_t fp, unsigned char *out)
{
#if defined(__GNUC__) && defined(__x86_64__)
    if (have_popcnt()) {
        near_distances_popcnt(fps, n, fp, out);
        return;
    }
#endif
    near_distances_generic(fps, n, fp, out);
}

static PyObject *
py_near_keys(PyObject *self, PyObject *args)
{
    Py_buffer view;
    unsigned long long fp;
    int k;
    Py_ssize_t limit;
    PyObject *keys_of;
    if (!PyArg_ParseTuple(args, "y*KinO!:near_keys", &view, &fp, &k, &limit, &PyDict_Type,
                          &keys_of)) {
        return NULL;
    }
    PyObject *result = NULL;
    unsigned char *distances = NULL;
    NearHit *hits = NULL;
    NearKey *found = NULL;
    if (view.len % 8 != 0) {
        PyErr_SetString(PyExc_TypeError, "near_keys: fingerprints must be 64-bit words");
        goto done;
    }
    Py_ssize_t n = view.len / 8, count = 0;
    const uint64_t *fps = view.buf;
    distances = PyMem_Malloc((size_t)(n > 0 ? n : 1));
    if (distances == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    near_distances(fps, n, (uint64_t)fp, distances);
    Py_ssize_t at[66] = {0}; /* fingerprints at each distance */
    for (Py_ssize_t i = 0; i < n; i++) {
        int d = distances[i];
        if (d <= k) {
            at[d]++;
            count++;
        }
    }
    int cut = 64;
    if (limit > 0 && limit < count) { /* the distance of the limit-th nearest: all ties kept */
        Py_ssize_t seen = 0;
        for (cut = 0; cut < 64; cut++) {
            seen += at[cut];
            if (seen >= limit) break;
        }
    }
    hits = PyMem_Malloc((size_t)(count > 0 ? count : 1) * sizeof(NearHit));
    if (hits == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int d = distances[i];
        if (d <= k && d <= cut) {
            hits[kept].fp = fps[i];
            hits[kept].dist = d;
            kept++;
        }
    }
    qsort(hits, (size_t)kept, sizeof(NearHit), near_hit_order);
    Py_ssize_t cap = kept > 0 ? kept : 1, size = 0;
    found = PyMem_Malloc((size_t)cap * sizeof(NearKey));
    if (found == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t h = 0; h < kept; h++) {
        if (limit >= 0 && size > 0 && size >= limit && hits[h].dist > found[size - 1].dist) {
            break;
        }
        PyObject *key_fp = PyLong_FromUnsignedLongLong(hits[h].fp);
        if (key_fp == NULL) goto done;
        PyObject *keys = PyDict_GetItemWithError(keys_of, key_fp); /* borrowed */
        if (keys == NULL) {
            if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, key_fp);
            Py_DECREF(key_fp);
            goto done;
        }
        Py_DECREF(key_fp);
        if (!PyDict_Check(keys)) {
            PyErr_SetString(PyExc_TypeError, "near_keys: keys_of must map to dicts of keys");
            goto done;
        }
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(keys, &pos, &key, &value)) {
            int overflow = 0;
            long long number = PyLong_Check(key) ? PyLong_AsLongLongAndOverflow(key, &overflow) : 0;
            if (!PyLong_Check(key) || overflow) { /* Python ranks what is no 64-bit int */
                result = Py_NewRef(Py_None);
                goto done;
            }
            if (number == -1 && PyErr_Occurred()) goto done;
            if (size == cap) {
                NearKey *grown = PyMem_Realloc(found, (size_t)(2 * cap) * sizeof(NearKey));
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                found = grown;
                cap *= 2;
            }
            found[size].key = number;
            found[size].fp = hits[h].fp;
            found[size].dist = hits[h].dist;
            size++;
        }
    }
    qsort(found, (size_t)size, sizeof(NearKey), near_key_order);
    if (limit >= 0 && size > limit) {
        size = limit;
    }
    result = PyList_New(size);
    if (result == NULL) goto done;
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *item = Py_BuildValue("(LKi)", found[i].key, (unsigned long long)found[i].fp,
                                       found[i].dist);
        if (item == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, item);
    }
done:
    PyMem_Free(distances);
    PyMem_Free(hits);
    PyMem_Free(found);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"term_simhash", py_term_simhash, METH_VARARGS,
     "term_simhash(labels, marks, sizes, path_depth, max_weight) -> the structural SimHash "
     "of a term's flat preorder, or None for a mark past 64 bits"},
    {"shape_simhash", py_shape_simhash, METH_VARARGS,
     "shape_simhash(labels, marks, sizes) -> the mark-free shape SimHash, or None for a "
     "mark past 64 bits"},
    {"blake64", py_blake64, METH_O,
     "blake64(text) -> the 8-byte BLAKE2b digest of text's UTF-8, as a big-endian int"},
    {"blake64_many", py_blake64_many, METH_O, "blake64_many(texts) -> [blake64(t) for t in texts]"},
    {"normalise", py_normalise, METH_VARARGS,
     "normalise(text, blanks) -> textprint.normalise(text), or None for a character outside "
     "ASCII that is not in the bitmap blanks"},
    {"blanked", py_blanked, METH_VARARGS,
     "blanked(folded, is_blank) -> \" \".join(folded.translate(textprint._BLANKING).split()) "
     "of NFKC-normalised, case-folded text; is_blank(code) says whether a character outside "
     "ASCII blanks, asked once a process"},
    {"holding", py_holding, METH_VARARGS,
     "holding(texts, chars) -> the indices of the str in the list texts that hold any of chars"},
    {"numbers_zeroed", py_numbers_zeroed, METH_O,
     "numbers_zeroed(text) -> textprint._NUMBERS.sub(\"0\", text): numbers and ids as one 0"},
    {"long_sentences", py_long_sentences, METH_VARARGS,
     "long_sentences(paragraph, keep, min_chars, blanks) -> the `keep` longest normalised "
     "sentences in order, or None for a character outside ASCII that is not in blanks"},
    {"layers", py_layers, METH_VARARGS,
     "layers(blocks, keep, min_chars, blanks, words, normalise, long_sentences) -> (document, "
     "sections, paragraphs, sentence hashes, simhash) as content_print reads them, or None "
     "for a block Python must read"},
    {"content_bounds", py_content_bounds, METH_VARARGS,
     "content_bounds(mine, others) -> [prints.content_bound(mine, o) for o in others], from "
     "packed summaries (bytes), or None for one it cannot read in place"},
    {"near_keys", py_near_keys, METH_VARARGS,
     "near_keys(fps, fp, k, limit, keys_of) -> MemoryIndex._query's (key, fingerprint, "
     "distance) from the scan's fingerprints (64-bit words), or None for a key past 64 bits"},
    {"shingle_simhash", py_shingle_simhash, METH_VARARGS,
     "shingle_simhash(sentences, words) -> SimHash of the word shingles weighted by count "
     "(at most 255)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_text",
                                    "Text-print kernels (BLAKE2b-64, long sentences, shingles).",
                                    -1, methods};

PyMODINIT_FUNC
PyInit__text(void)
{
    return PyModule_Create(&module);
}
