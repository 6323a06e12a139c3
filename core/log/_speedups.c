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

/* ------------------------------------------------------------------ encoding */

static Py_ssize_t uvarint_size(uint64_t v) {
    Py_ssize_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static unsigned char *put_uvarint(unsigned char *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

/* Borrowed view of a bytes-like or None; returns 0, or -1 with TypeError set. */
static int bytes_view(PyObject *obj, const char **data, Py_ssize_t *len, const char *what,
                      Py_ssize_t index) {
    if (obj == Py_None) {
        *data = NULL;
        *len = -1;
        return 0;
    }
    if (PyBytes_Check(obj)) {
        *data = PyBytes_AS_STRING(obj);
        *len = PyBytes_GET_SIZE(obj);
        return 0;
    }
    if (PyByteArray_Check(obj)) {
        *data = PyByteArray_AS_STRING(obj);
        *len = PyByteArray_GET_SIZE(obj);
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "record %zd: %s must be bytes, bytearray or None, not %.100s",
                 index, what, Py_TYPE(obj)->tp_name);
    return -1;
}

/* One record's fields, borrowed from the caller's objects for the two passes. */
typedef struct {
    const char *key, *value;
    Py_ssize_t key_len, value_len;
    PyObject *headers; /* a sequence, or NULL when empty */
    int64_t timestamp;
    Py_ssize_t body; /* bytes after the length varint */
} rec_view;

static Py_ssize_t header_pairs_size(PyObject *headers, Py_ssize_t index, int write,
                                    unsigned char **out) {
    PyObject *seq = PySequence_Fast(headers, "headers must be a sequence");
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_TypeError, "record %zd: each header must be a (str, bytes) pair",
                         index);
            Py_DECREF(seq);
            return -1;
        }
        Py_ssize_t klen;
        const char *k = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &klen);
        const char *v;
        Py_ssize_t vlen;
        if (k == NULL || bytes_view(PyTuple_GET_ITEM(pair, 1), &v, &vlen, "header value",
                                    index) < 0) {
            Py_DECREF(seq);
            return -1;
        }
        total += uvarint_size(zigzag(klen)) + klen + uvarint_size(zigzag(vlen)) +
                 (vlen > 0 ? vlen : 0);
        if (write) {
            unsigned char *p = put_uvarint(*out, zigzag(klen));
            memcpy(p, k, (size_t)klen);
            p = put_uvarint(p + klen, zigzag(vlen));
            if (vlen > 0) {
                memcpy(p, v, (size_t)vlen);
                p += vlen;
            }
            *out = p;
        }
    }
    Py_DECREF(seq);
    return total;
}

/*
 * encode_records(records, default_timestamp, reserve) -> (bytearray, first_ts, max_ts)
 *
 * The records array of an uncompressed v2 batch, offset deltas 0..n-1, from tuples whose
 * first four items are key, value, headers, timestamp (None = default_timestamp), written
 * after ``reserve`` zero bytes that the caller fills with the batch header. Sizes are
 * computed first so the output is allocated once and filled with memcpy.
 */
static PyObject *encode_records(PyObject *self, PyObject *args) {
    PyObject *records;
    long long default_ts;
    Py_ssize_t reserve;
    if (!PyArg_ParseTuple(args, "OLn", &records, &default_ts, &reserve)) {
        return NULL;
    }
    if (reserve < 0) {
        PyErr_SetString(PyExc_ValueError, "reserve must not be negative");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(records, "records must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n == 0) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "a record batch needs at least one record");
        return NULL;
    }
    rec_view *views = PyMem_Malloc(sizeof(rec_view) * (size_t)n);
    if (views == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    PyObject *result = NULL;
    int64_t first_ts = 0, max_ts = 0;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *rec = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) < 4) {
            PyErr_Format(PyExc_TypeError,
                         "record %zd must be a tuple of key, value, headers, timestamp", i);
            goto done;
        }
        rec_view *r = &views[i];
        if (bytes_view(PyTuple_GET_ITEM(rec, 0), &r->key, &r->key_len, "key", i) < 0 ||
            bytes_view(PyTuple_GET_ITEM(rec, 1), &r->value, &r->value_len, "value", i) < 0) {
            goto done;
        }
        PyObject *ts = PyTuple_GET_ITEM(rec, 3);
        if (ts == Py_None) {
            r->timestamp = default_ts;
        } else {
            r->timestamp = PyLong_AsLongLong(ts);
            if (r->timestamp == -1 && PyErr_Occurred()) {
                goto done;
            }
        }
        if (i == 0) {
            first_ts = max_ts = r->timestamp;
        } else if (r->timestamp > max_ts) {
            max_ts = r->timestamp;
        }
        PyObject *headers = PyTuple_GET_ITEM(rec, 2);
        Py_ssize_t header_count = 0, header_bytes = 0;
        r->headers = NULL;
        if (headers != Py_None) {
            header_count = PyObject_Length(headers);
            if (header_count < 0) {
                goto done;
            }
            if (header_count > 0) {
                header_bytes = header_pairs_size(headers, i, 0, NULL);
                if (header_bytes < 0) {
                    goto done;
                }
                r->headers = headers;
            }
        }
        r->body = 1 + uvarint_size(zigzag(r->timestamp - first_ts)) + uvarint_size(zigzag(i)) +
                  uvarint_size(zigzag(r->key_len)) + (r->key_len > 0 ? r->key_len : 0) +
                  uvarint_size(zigzag(r->value_len)) + (r->value_len > 0 ? r->value_len : 0) +
                  uvarint_size(zigzag(header_count)) + header_bytes;
        total += uvarint_size(zigzag(r->body)) + r->body;
    }
    PyObject *out = PyByteArray_FromStringAndSize(NULL, reserve + total);
    if (out == NULL) {
        goto done;
    }
    unsigned char *p = (unsigned char *)PyByteArray_AS_STRING(out);
    memset(p, 0, (size_t)reserve);
    p += reserve;
    for (Py_ssize_t i = 0; i < n; i++) {
        rec_view *r = &views[i];
        p = put_uvarint(p, zigzag(r->body));
        *p++ = 0; /* attributes */
        p = put_uvarint(p, zigzag(r->timestamp - first_ts));
        p = put_uvarint(p, zigzag(i));
        p = put_uvarint(p, zigzag(r->key_len));
        if (r->key_len > 0) {
            memcpy(p, r->key, (size_t)r->key_len);
            p += r->key_len;
        }
        p = put_uvarint(p, zigzag(r->value_len));
        if (r->value_len > 0) {
            memcpy(p, r->value, (size_t)r->value_len);
            p += r->value_len;
        }
        if (r->headers == NULL) {
            *p++ = 0;
        } else {
            p = put_uvarint(p, zigzag(PyObject_Length(r->headers)));
            if (header_pairs_size(r->headers, i, 1, &p) < 0) {
                Py_DECREF(out);
                goto done;
            }
        }
    }
    result = Py_BuildValue("(NLL)", out, (long long)first_ts, (long long)max_ts);
done:
    PyMem_Free(views);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"encode_records", encode_records, METH_VARARGS,
     "Encode records as an uncompressed v2 records array (sizes first, then memcpy)."},
    {"decode_records", decode_records, METH_VARARGS,
     "Decode an uncompressed v2 records array into consumer-record tuples."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups",
    "C decoder for RecordBatch v2 records arrays (see core/log/records.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
