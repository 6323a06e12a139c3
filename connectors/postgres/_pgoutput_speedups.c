/*
 * connectors.postgres._pgoutput_speedups: pgoutput TupleData in C.
 *
 * Why C: every streamed change carries one or two TupleData blocks, and reading them
 * column by column in Python (a kind byte, a big-endian length, a slice, a UTF-8 decode)
 * was about two thirds of decoding a change. decode_tuple does exactly what
 * pgoutput._tuple does, with every read bounds-checked: a truncated or malformed block
 * raises the PgOutputError the caller passes in.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8)
                     | (uint32_t)p[3]);
}

/* decode_tuple(unchanged, error, buf, at) -> (values, at): TupleData at buf[at:]. Values
 * are str for text ('t'), None for NULL ('n'), ``unchanged`` for an unchanged TOASTed value
 * ('u') and bytes for binary ('b'). */
static PyObject *decode_tuple(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer view;
    Py_ssize_t at;
    PyObject *unchanged, *error;
    if (!PyArg_ParseTuple(args, "OOy*n", &unchanged, &error, &view, &at)) {
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t size = view.len;
    PyObject *values = NULL;
    if (at < 0 || at + 2 > size) {
        PyErr_SetString(error, "truncated tuple data: no column count");
        goto fail;
    }
    int ncols = (int16_t)((buf[at] << 8) | buf[at + 1]);
    at += 2;
    if (ncols < 0) {
        PyErr_Format(error, "tuple data with a negative column count (%d)", ncols);
        goto fail;
    }
    values = PyList_New(ncols);
    if (values == NULL) {
        goto fail;
    }
    for (int i = 0; i < ncols; i++) {
        if (at >= size) {
            PyErr_Format(error, "truncated tuple data at column %d of %d", i + 1, ncols);
            goto fail;
        }
        unsigned char kind = buf[at];
        PyObject *value;
        if (kind == 't' || kind == 'b') {
            if (at + 5 > size) {
                PyErr_Format(error, "truncated tuple data at column %d of %d", i + 1, ncols);
                goto fail;
            }
            int32_t length = be32(buf + at + 1);
            if (length < 0 || length > size - (at + 5)) {
                PyErr_Format(error, "column %d of %d: length %d past the message's end",
                             i + 1, ncols, (int)length);
                goto fail;
            }
            const char *data = (const char *)buf + at + 5;
            value = kind == 't' ? PyUnicode_DecodeUTF8(data, length, NULL)
                                : PyBytes_FromStringAndSize(data, length);
            if (value == NULL) {
                goto fail;
            }
            at += 5 + length;
        } else if (kind == 'n') {
            value = Py_NewRef(Py_None);
            at += 1;
        } else if (kind == 'u') {
            value = Py_NewRef(unchanged);
            at += 1;
        } else {
            PyErr_Format(error, "unknown tuple column kind '%c'", kind);
            goto fail;
        }
        PyList_SET_ITEM(values, i, value);
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nn)", values, at);
fail:
    Py_XDECREF(values);
    PyBuffer_Release(&view);
    return NULL;
}

static PyMethodDef methods[] = {
    {"decode_tuple", decode_tuple, METH_VARARGS,
     "decode_tuple(unchanged, error, buf, at): pgoutput TupleData as (values, offset "
     "after it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pgoutput_speedups",
    "C decoder of pgoutput TupleData (see pgoutput.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__pgoutput_speedups(void) { return PyModule_Create(&module); }
