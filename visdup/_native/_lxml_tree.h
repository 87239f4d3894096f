/*
 * The leading fields of lxml's element object and of libxml2's node and attribute structs,
 * for the kernels that read a parsed page's tree in place (``_dom``, ``_term``).
 *
 * A kernel includes this after Python.h. The order of these fields has not changed in
 * libxml2's history; each kernel checks it at import on a small tree (its probe) and offers
 * its walks only when it holds, so that Python walks where the layout differs. No libxml2
 * function is called through these declarations.
 */
#ifndef VISDUP_LXML_TREE_H
#define VISDUP_LXML_TREE_H

enum {
    N_ELEMENT = 1,
    N_TEXT = 3,
    N_CDATA = 4,
    N_ENTITY_REF = 5,
    N_PI = 7,
    N_COMMENT = 8,
    N_XINCLUDE_START = 19,
    N_XINCLUDE_END = 20
};

typedef struct vd_attr vd_attr;
typedef struct vd_node vd_node;

struct vd_node { /* the leading fields of libxml2's struct _xmlNode */
    void *_private;
    int type;
    const unsigned char *name;
    vd_node *children;
    vd_node *last;
    vd_node *parent;
    vd_node *next;
    vd_node *prev;
    void *doc;
    void *ns;
    unsigned char *content;
    vd_attr *properties;
};

struct vd_attr { /* the leading fields of libxml2's struct _xmlAttr */
    void *_private;
    int type;
    const unsigned char *name;
    vd_node *children;
    vd_node *last;
    vd_node *parent;
    vd_attr *next;
    vd_attr *prev;
    void *doc;
    void *ns;
};

typedef struct { /* the leading fields of lxml's struct LxmlElement (lxml/etree.h) */
    PyObject_HEAD
    PyObject *doc;
    vd_node *c_node;
} ElementHead; /* c_node: libxml2's xmlNode */

#endif /* VISDUP_LXML_TREE_H */
