/*
 * connect.converters._json_speedups: the JSON text of a struct's values, in C.
 *
 * Why C: JsonConverter writes one struct schema for millions of records (a Debezium
 * envelope and its source block: ~30 fields), and the generated Python encoder spent
 * ~0.1 us per field on type checks and formatting (json_struct.py). Here a FieldsEncoder
 * holds, per field, the text before its value (the opening brace or comma and the quoted
 * name), its kind and the field's complete Python encoder; a call walks the values once
 * and joins the pieces.
 *
 * The contract that keeps the output exact: every fast path below writes exactly what the
 * field's Python encoder writes for that value, and anything else (a value outside the
 * kind's common case, a string that needs escaping, logical types, floats, nested structs,
 * arrays, maps) is handed to that encoder. So this module decides only how fast a value
 * is written, never what is written.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

enum { KIND_OTHER = 0, KIND_INT = 1, KIND_STR = 2, KIND_BOOL = 3 };

typedef struct {
    PyObject *prefix;   /* str: "{" or "," then the quoted field name and ":" */
    PyObject *encoder;  /* the field's complete encoder: value -> str */
    int kind;
    int plain_null;     /* None is written "null" (optional, no default replaces it) */
    long long low, high;
} field_spec;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Py_ssize_t count;
    field_spec *fields;
    PyObject *closing;  /* "}", or "{}" for a struct without fields */
} FieldsEncoder;

static PyObject *EMPTY;

/* What a string needs to be written as encode_basestring writes it: STR_PLAIN (nothing to
 * escape), STR_QUOTES (only '"' and '\\', escaped here), STR_OTHER (control characters:
 * the field's encoder, which writes them as Jackson does). */
enum { STR_PLAIN = 0, STR_QUOTES = 1, STR_OTHER = 2 };

static int scan_ascii(const char *p, Py_ssize_t n) {
    int found = STR_PLAIN;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20) {
            return STR_OTHER;
        }
        if (c == '"' || c == '\\') {
            found = STR_QUOTES;
        }
    }
    return found;
}

/* The text being built: ASCII bytes in a buffer while everything written is ASCII (the
 * common case), else a list of str pieces joined at the end. */
typedef struct {
    char *buf;
    Py_ssize_t len, cap;
    PyObject *pieces;  /* NULL while ASCII */
    char stack[4096];
} builder;

static int reserve(builder *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap) {
        return 0;
    }
    Py_ssize_t cap = b->cap * 2;
    while (cap < b->len + extra) {
        cap *= 2;
    }
    char *grown;
    if (b->buf == b->stack) {
        grown = PyMem_Malloc((size_t)cap);
        if (grown != NULL) {
            memcpy(grown, b->buf, (size_t)b->len);
        }
    } else {
        grown = PyMem_Realloc(b->buf, (size_t)cap);
    }
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->buf = grown;
    b->cap = cap;
    return 0;
}

static int put(builder *b, const char *p, Py_ssize_t n) {
    if (b->pieces != NULL) {
        PyObject *piece = PyUnicode_FromStringAndSize(p, n);
        if (piece == NULL) {
            return -1;
        }
        int rc = PyList_Append(b->pieces, piece);
        Py_DECREF(piece);
        return rc;
    }
    if (reserve(b, n) < 0) {
        return -1;
    }
    memcpy(b->buf + b->len, p, (size_t)n);
    b->len += n;
    return 0;
}

/* From here on the text is a list of pieces, starting with the ASCII written so far. */
static int to_pieces(builder *b) {
    b->pieces = PyList_New(0);
    if (b->pieces == NULL) {
        return -1;
    }
    PyObject *head = PyUnicode_FromStringAndSize(b->buf, b->len);
    if (head == NULL) {
        return -1;
    }
    int rc = PyList_Append(b->pieces, head);
    Py_DECREF(head);
    return rc;
}

/* Append a str (any content); the ASCII ones are copied while the text is ASCII. */
static int put_str(builder *b, PyObject *s) {
    if (b->pieces == NULL) {
        if (PyUnicode_IS_ASCII(s)) {
            return put(b, (const char *)PyUnicode_1BYTE_DATA(s), PyUnicode_GET_LENGTH(s));
        }
        if (to_pieces(b) < 0) {
            return -1;
        }
    }
    return PyList_Append(b->pieces, s);
}

static int put_ll(builder *b, long long x) {
    char digits[24];
    char *end = digits + sizeof(digits), *p = end;
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0) {
        *--p = '-';
    }
    return put(b, p, end - p);
}

/* '"' + s + '"' with '"' and '\\' escaped, for an ASCII s without control characters. */
static int put_quoted_ascii(builder *b, const char *p, Py_ssize_t n, int escapes) {
    if (!escapes) {
        if (b->pieces == NULL && reserve(b, n + 2) == 0) {
            b->buf[b->len++] = '"';
            memcpy(b->buf + b->len, p, (size_t)n);
            b->len += n;
            b->buf[b->len++] = '"';
            return 0;
        }
        if (PyErr_Occurred()) {
            return -1;
        }
    }
    char *out = PyMem_Malloc((size_t)(2 * n + 2));
    if (out == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t k = 0;
    out[k++] = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] == '"' || p[i] == '\\') {
            out[k++] = '\\';
        }
        out[k++] = p[i];
    }
    out[k++] = '"';
    int rc = put(b, out, k);
    PyMem_Free(out);
    return rc;
}

/* The field encoder's text for value, formatted as an f-string would format it. */
static PyObject *encode_other(field_spec *f, PyObject *value) {
    PyObject *text = PyObject_CallOneArg(f->encoder, value);
    if (text == NULL || PyUnicode_CheckExact(text)) {
        return text;
    }
    PyObject *formatted = PyObject_Format(text, EMPTY);
    Py_DECREF(text);
    return formatted;
}

/* Write field f's value; 0, or -1 with an exception set. */
static int put_field(builder *b, field_spec *f, PyObject *v) {
    if (v == Py_None && f->plain_null) {
        return put(b, "null", 4);
    }
    switch (f->kind) {
    case KIND_INT:
        if (PyLong_CheckExact(v)) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (x == -1 && PyErr_Occurred()) {
                return -1;
            }
            if (!overflow && f->low <= x && x <= f->high) {
                return put_ll(b, x);
            }
        }
        break;
    case KIND_STR:
        if (PyUnicode_CheckExact(v) && PyUnicode_IS_READY(v) && PyUnicode_IS_ASCII(v)) {
            const char *p = (const char *)PyUnicode_1BYTE_DATA(v);
            Py_ssize_t n = PyUnicode_GET_LENGTH(v);
            int found = scan_ascii(p, n);
            if (found != STR_OTHER) {
                return put_quoted_ascii(b, p, n, found == STR_QUOTES);
            }
        }
        break;  /* non-ASCII text, control characters, subclasses: the encoder */
    case KIND_BOOL:
        if (v == Py_True) {
            return put(b, "true", 4);
        }
        if (v == Py_False) {
            return put(b, "false", 5);
        }
        break;
    default:
        break;
    }
    PyObject *text = encode_other(f, v);
    if (text == NULL) {
        return -1;
    }
    int rc = put_str(b, text);
    Py_DECREF(text);
    return rc;
}

static PyObject *encoder_vectorcall(PyObject *self_obj, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames) {
    FieldsEncoder *self = (FieldsEncoder *)self_obj;
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "a FieldsEncoder takes one argument, the values");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(args[0], "a struct's values must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    if (PySequence_Fast_GET_SIZE(seq) != self->count) {
        PyErr_Format(PyExc_ValueError, "expected %zd struct values, got %zd", self->count,
                     PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return NULL;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    builder b;
    b.buf = b.stack;
    b.len = 0;
    b.cap = sizeof(b.stack);
    b.pieces = NULL;
    PyObject *result = NULL;
    for (Py_ssize_t i = 0; i < self->count; i++) {
        field_spec *f = &self->fields[i];
        if (put_str(&b, f->prefix) < 0 || put_field(&b, f, items[i]) < 0) {
            goto done;
        }
    }
    if (put_str(&b, self->closing) < 0) {
        goto done;
    }
    if (b.pieces != NULL) {
        result = PyUnicode_Join(EMPTY, b.pieces);
    } else {
        result = PyUnicode_New(b.len, 127);
        if (result != NULL) {
            memcpy(PyUnicode_1BYTE_DATA(result), b.buf, (size_t)b.len);
        }
    }
done:
    Py_XDECREF(b.pieces);
    if (b.buf != b.stack) {
        PyMem_Free(b.buf);
    }
    Py_DECREF(seq);
    return result;
}

static void encoder_dealloc(FieldsEncoder *self) {
    PyObject_GC_UnTrack(self);
    if (self->fields != NULL) {
        for (Py_ssize_t i = 0; i < self->count; i++) {
            Py_XDECREF(self->fields[i].prefix);
            Py_XDECREF(self->fields[i].encoder);
        }
        PyMem_Free(self->fields);
    }
    Py_XDECREF(self->closing);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int encoder_traverse(FieldsEncoder *self, visitproc visit, void *arg) {
    for (Py_ssize_t i = 0; self->fields != NULL && i < self->count; i++) {
        Py_VISIT(self->fields[i].encoder);
    }
    return 0;
}

static int encoder_clear(FieldsEncoder *self) {
    for (Py_ssize_t i = 0; self->fields != NULL && i < self->count; i++) {
        Py_CLEAR(self->fields[i].encoder);
    }
    return 0;
}

static PyObject *encoder_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    return PyVectorcall_Call(self, args, kwargs);
}

/* FieldsEncoder(specs, closing): specs is a sequence of
 * (prefix: str, kind: int, plain_null: bool, low: int, high: int, encoder: callable). */
static PyObject *encoder_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *specs, *closing;
    static char *kwlist[] = {"specs", "closing", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OU", kwlist, &specs, &closing)) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(specs, "specs must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    FieldsEncoder *self = (FieldsEncoder *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    self->vectorcall = encoder_vectorcall;
    self->fields = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof(field_spec));
    if (self->fields == NULL) {
        Py_DECREF(seq);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->count = n;
    Py_INCREF(closing);
    self->closing = closing;
    for (Py_ssize_t i = 0; i < n; i++) {
        field_spec *f = &self->fields[i];
        PyObject *prefix, *encoder;
        int kind, plain_null;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "UipLLO", &prefix, &kind,
                              &plain_null, &f->low, &f->high, &encoder)) {
            Py_DECREF(seq);
            Py_DECREF(self);
            return NULL;
        }
        if (kind < KIND_OTHER || kind > KIND_BOOL || !PyCallable_Check(encoder)) {
            PyErr_Format(PyExc_ValueError, "field %zd: bad kind or encoder", i);
            Py_DECREF(seq);
            Py_DECREF(self);
            return NULL;
        }
        Py_INCREF(prefix);
        Py_INCREF(encoder);
        f->prefix = prefix;
        f->encoder = encoder;
        f->kind = kind;
        f->plain_null = plain_null;
    }
    Py_DECREF(seq);
    return (PyObject *)self;
}

static PyTypeObject FieldsEncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "connect.converters._json_speedups.FieldsEncoder",
    .tp_basicsize = sizeof(FieldsEncoder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "The JSON text of a struct's values (see json_struct.py).",
    .tp_new = encoder_new,
    .tp_dealloc = (destructor)encoder_dealloc,
    .tp_traverse = (traverseproc)encoder_traverse,
    .tp_clear = (inquiry)encoder_clear,
    .tp_call = encoder_call,
    .tp_vectorcall_offset = offsetof(FieldsEncoder, vectorcall),
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_json_speedups",
    "C writer of JSON struct values for JsonConverter (see json_struct.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__json_speedups(void) {
    if (PyType_Ready(&FieldsEncoderType) < 0) {
        return NULL;
    }
    EMPTY = PyUnicode_InternFromString("");
    if (EMPTY == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&FieldsEncoderType);
    if (PyModule_AddObject(m, "FieldsEncoder", (PyObject *)&FieldsEncoderType) < 0) {
        Py_DECREF(&FieldsEncoderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
