/*
 * core.log._speedups: decode the records array of an uncompressed RecordBatch v2 straight
 * into consumer-record tuples.
 *
 * Why C: a consumer builds a million records a second. Going through aiokafka's Cython
 * reader costs one intermediate object per record, and a NamedTuple instance stays tracked
 * by the cyclic garbage collector forever (CPython only untracks *exact* tuples), so every
 * fetch's records get promoted and walked by full collections. Here each record is
 * allocated once, filled in place, and untracked when everything it holds is atomic (str,
 * bytes, int, None, tuples of those): such an object can never be part of a reference
 * cycle, which is the same reasoning CPython applies to exact tuples.
 *
 * The caller (core/log/records.py) has already validated the batch header and its CRC;
 * every read here is still bounds-checked, and any inconsistency raises ValueError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} cursor;

/* Unsigned LEB128 of at most max_bytes bytes; returns 0 on success, -1 on malformed input. */
static int read_uvarint(cursor *c, int max_bytes, uint64_t *out) {
    uint64_t value = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (c->p >= c->end) {
            return -1;
        }
        unsigned char b = *c->p++;
        value |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = value;
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* Zig-zag signed varint (max_bytes 5) or varlong (max_bytes 10), as Kafka writes them. */
static int read_varint(cursor *c, int max_bytes, int64_t *out) {
    uint64_t raw;
    if (read_uvarint(c, max_bytes, &raw) < 0) {
        return -1;
    }
    *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
    return 0;
}

static PyObject *malformed(const char *what, Py_ssize_t index) {
    PyErr_Format(PyExc_ValueError, "malformed record %zd in batch: %s", index, what);
    return NULL;
}

/* Read a length-prefixed byte string: -1 means null. Returns a new reference or NULL. */
static PyObject *read_bytes(cursor *c, int *is_null) {
    int64_t n;
    if (read_varint(c, 5, &n) < 0 || n < -1 || n > (int64_t)(c->end - c->p)) {
        return NULL;
    }
    if (n == -1) {
        *is_null = 1;
        Py_RETURN_NONE;
    }
    *is_null = 0;
    PyObject *out = PyBytes_FromStringAndSize((const char *)c->p, (Py_ssize_t)n);
    c->p += n;
    return out;
}

static PyObject *read_headers(cursor *c, Py_ssize_t index, PyObject *empty) {
    int64_t count;
    if (read_varint(c, 5, &count) < 0 || count < 0 || count > (int64_t)(c->end - c->p)) {
        return malformed("bad header count", index);
    }
    if (count == 0) {
        Py_INCREF(empty);
        return empty;
    }
    PyObject *headers = PyTuple_New((Py_ssize_t)count);
    if (headers == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < (Py_ssize_t)count; i++) {
        int64_t klen;
        if (read_varint(c, 5, &klen) < 0 || klen < 0 || klen > (int64_t)(c->end - c->p)) {
            Py_DECREF(headers);
            return malformed("bad header key length", index);
        }
        PyObject *key = PyUnicode_DecodeUTF8((const char *)c->p, (Py_ssize_t)klen, "strict");
        if (key == NULL) {
            Py_DECREF(headers);
            return NULL;
        }
        c->p += klen;
        int is_null;
        PyObject *value = read_bytes(c, &is_null);
        if (value == NULL) {
            Py_DECREF(key);
            Py_DECREF(headers);
            if (!PyErr_Occurred()) {
                malformed("bad header value", index);
            }
            return NULL;
        }
        PyObject *pair = PyTuple_Pack(2, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (pair == NULL) {
            Py_DECREF(headers);
            return NULL;
        }
        PyObject_GC_UnTrack(pair); /* (str, bytes | None): atomic */
        PyTuple_SET_ITEM(headers, i, pair);
    }
    PyObject_GC_UnTrack(headers); /* a tuple of atomic pairs */
    return headers;
}

/*
 * decode_records(cls, topic, partition, data, count, base_offset, base_timestamp,
 *                timestamp_type, max_timestamp, min_offset) -> list
 *
 * ``data`` is the records array (everything after recordsCount). ``cls`` is a tuple
 * subclass whose fields are (topic, partition, offset, timestamp, timestamp_type, key,
 * value, headers). Records with offsets below ``min_offset`` are skipped. For LogAppendTime
 * (timestamp_type 1) every record gets ``max_timestamp``.
 */
static PyObject *decode_records(PyObject *self, PyObject *args) {
    PyTypeObject *cls;
    PyObject *topic, *partition;
    Py_buffer data;
    Py_ssize_t count;
    long long base_offset, base_timestamp, max_timestamp, min_offset;
    int timestamp_type;
    if (!PyArg_ParseTuple(args, "O!UOy*nLLiLL", &PyType_Type, &cls, &topic, &partition, &data,
                          &count, &base_offset, &base_timestamp, &timestamp_type,
                          &max_timestamp, &min_offset)) {
        return NULL;
    }
    PyObject *result = NULL, *empty = NULL, *ts_type = NULL;
    if (!PyType_IsSubtype(cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a tuple subclass");
        goto done;
    }
    if (count < 0 || count > data.len) {
        PyErr_Format(PyExc_ValueError, "record count %zd does not fit %zd bytes", count,
                     data.len);
        goto done;
    }
    empty = PyTuple_New(0);
    ts_type = PyLong_FromLong(timestamp_type);
    result = PyList_New(0);
    if (empty == NULL || ts_type == NULL || result == NULL) {
        Py_CLEAR(result);
        goto done;
    }
    cursor c = {(const unsigned char *)data.buf, (const unsigned char *)data.buf + data.len};
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta;
        if (read_varint(&c, 5, &length) < 0 || length < 0 || length > (int64_t)(c.end - c.p)) {
            malformed("bad length", i);
            Py_CLEAR(result);
            goto done;
        }
        cursor rc = {c.p, c.p + length};
        c.p += length;
        if (rc.p >= rc.end) {
            malformed("empty record", i);
            Py_CLEAR(result);
            goto done;
        }
        rc.p++; /* attributes: unused by Kafka */
        if (read_varint(&rc, 10, &ts_delta) < 0 || read_varint(&rc, 5, &offset_delta) < 0) {
            malformed("bad timestamp or offset delta", i);
            Py_CLEAR(result);
            goto done;
        }
        long long offset = base_offset + offset_delta;
        int key_null, value_null;
        PyObject *key = read_bytes(&rc, &key_null);
        if (key == NULL) {
            if (!PyErr_Occurred()) {
                malformed("bad key", i);
            }
            Py_CLEAR(result);
            goto done;
        }
        PyObject *value = read_bytes(&rc, &value_null);
        if (value == NULL) {
            Py_DECREF(key);
            if (!PyErr_Occurred()) {
                malformed("bad value", i);
            }
            Py_CLEAR(result);
            goto done;
        }
        PyObject *headers = read_headers(&rc, i, empty);
        if (headers == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_CLEAR(result);
            goto done;
        }
        if (rc.p != rc.end) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            malformed("length does not match its fields", i);
            Py_CLEAR(result);
            goto done;
        }
        if (offset < min_offset) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            continue;
        }
        long long timestamp = timestamp_type == 1 ? max_timestamp : base_timestamp + ts_delta;
        PyObject *offset_obj = PyLong_FromLongLong(offset);
        PyObject *ts_obj = PyLong_FromLongLong(timestamp);
        PyObject *record = cls->tp_alloc(cls, 8);
        if (offset_obj == NULL || ts_obj == NULL || record == NULL) {
            Py_XDECREF(offset_obj);
            Py_XDECREF(ts_obj);
            Py_XDECREF(record);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            Py_CLEAR(result);
            goto done;
        }
        Py_INCREF(topic);
        Py_INCREF(partition);
        Py_INCREF(ts_type);
        PyTuple_SET_ITEM(record, 0, topic);
        PyTuple_SET_ITEM(record, 1, partition);
        PyTuple_SET_ITEM(record, 2, offset_obj);
        PyTuple_SET_ITEM(record, 3, ts_obj);
        PyTuple_SET_ITEM(record, 4, ts_type);
        PyTuple_SET_ITEM(record, 5, key);
        PyTuple_SET_ITEM(record, 6, value);
        PyTuple_SET_ITEM(record, 7, headers);
        /* topic is a str and partition an int (checked by the caller's types); everything
           else built here is atomic, so the record cannot take part in a cycle. */
        if (PyLong_CheckExact(partition) && PyObject_GC_IsTracked(record)) {
            PyObject_GC_UnTrack(record);
        }
        int rc_append = PyList_Append(result, record);
        Py_DECREF(record);
        if (rc_append < 0) {
            Py_CLEAR(result);
            goto done;
        }
    }
    if (c.p != c.end) {
        PyErr_Format(PyExc_ValueError, "%zd bytes left after %zd records",
                     (Py_ssize_t)(c.end - c.p), count);
        Py_CLEAR(result);
    }
done:
    Py_XDECREF(empty);
    Py_XDECREF(ts_type);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_records", decode_records, METH_VARARGS,
     "Decode an uncompressed v2 records array into consumer-record tuples."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups",
    "C decoder for RecordBatch v2 records arrays (see core/log/records.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
