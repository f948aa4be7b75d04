/* The classic JoinGroup/SyncGroup fast path in C (issue 22): protocol/classic_group_codec.py, without its frames.
 *
 * A full rebalance of a 10,000-member group reads 20,000 requests and writes 20,000 answers on the event loop; the
 * struct fast path of classic_group_codec.py spent about a tenth of the loop's time there (a dozen Python calls per
 * field). These functions read and write the same bytes, and return the same objects:
 *
 *   setup(classes, python, max_fast_bytes)   the body classes (JoinGroupProtocol, JoinGroupRequest,
 *                                           SyncGroupAssignment, SyncGroupRequest) and the Python functions
 *                                           (decode_join_request, decode_sync_request, encode_join_response,
 *                                           encode_sync_response) of classic_group_codec.py
 *   decode_join_request(payload, max_bytes=max_fast_bytes) / decode_sync_request(...)
 *                                           (correlation id, client id, body) or None, as the Python decoders
 *   encode_join_response(response, correlation_id) / encode_sync_response(...)
 *                                           the framed answer or None, as the Python encoders
 *
 * Each handles the usual shape itself: a bytes payload, and answers of exact ints, strs and bytes. Anything else, and
 * any input it would not take (a damaged or unusual request, a value the version cannot carry), is handed to the
 * Python function with the same arguments, so every verdict on unusual input is the Python path's own: a request the
 * C reads is one the Python reads to the same body (tests/unit/protocol/test_classic_group_native.py checks both on
 * random and damaged input). Built with the compiled modules by `python -m rebalance_lab.compiled build` (native.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

enum { JOIN_KEY = 11, SYNC_KEY = 14, JOIN_LAST = 9, SYNC_LAST = 5, JOIN_FLEXIBLE = 6, SYNC_FLEXIBLE = 4 };

static PyObject *JoinProtocol, *JoinRequest, *SyncAssignment, *SyncRequest;
static PyObject *py_decode_join, *py_decode_sync, *py_encode_join, *py_encode_sync;
static Py_ssize_t max_fast = 64 * 1024;
static PyObject *s_version, *s_throttle, *s_error, *s_generation, *s_protocol_type, *s_protocol_name, *s_leader,
    *s_skip, *s_member_id, *s_members, *s_instance, *s_metadata, *s_assignment, *s_empty;

/* -- reading ------------------------------------------------------------------------------------------------------ */

typedef struct {
    const unsigned char *p;
    Py_ssize_t n, pos;
} Reader;

/* Each returns 0, or -1 when the input is not the usual shape (the Python path then decides). */

static int int16_at(Reader *r, int *out) {
    if (r->pos + 2 > r->n) return -1;
    const unsigned char *p = r->p + r->pos;
    *out = (int16_t)(uint16_t)((p[0] << 8) | p[1]);
    r->pos += 2;
    return 0;
}

static int int32_at(Reader *r, long *out) {
    if (r->pos + 4 > r->n) return -1;
    const unsigned char *p = r->p + r->pos;
    *out = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
    r->pos += 4;
    return 0;
}

/* ByteUtils.readUnsignedVarint: at most 5 bytes (fast_reader.uvarint_at). */
static int uvarint_at(Reader *r, int64_t *out) {
    int64_t value = 0;
    for (int shift = 0; shift <= 28; shift += 7) {
        if (r->pos >= r->n) return -1;
        unsigned char byte = r->p[r->pos++];
        value |= (int64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 0;
        }
    }
    return -1;
}

/* A new str of n UTF-8 bytes at the position (strict, as bytes.decode); NULL with no error set when not UTF-8. */
static PyObject *text_at(Reader *r, Py_ssize_t n) {
    if (n < 0 || r->pos + n > r->n) return NULL;
    PyObject *s = PyUnicode_DecodeUTF8((const char *)r->p + r->pos, n, NULL);
    if (s == NULL) {
        PyErr_Clear();
        return NULL;
    }
    r->pos += n;
    return s;
}

/* A classic (int16 length) nullable string: a new reference (Py_None for a negative length), or NULL. */
static PyObject *string16_at(Reader *r) {
    int length;
    if (int16_at(r, &length) < 0) return NULL;
    if (length < 0) Py_RETURN_NONE;
    return text_at(r, length);
}

/* A compact (varint length + 1) nullable string. */
static PyObject *compact_string_at(Reader *r) {
    int64_t length;
    if (uvarint_at(r, &length) < 0) return NULL;
    if (length == 0) Py_RETURN_NONE;
    return text_at(r, (Py_ssize_t)(length - 1));
}

/* A compact bytes' or array's length (-1 for null). */
static int compact_length_at(Reader *r, int64_t *out) {
    if (uvarint_at(r, out) < 0) return -1;
    *out -= 1;
    return 0;
}

static PyObject *slice(Reader *r, Py_ssize_t start, Py_ssize_t end) {
    return PyBytes_FromStringAndSize((const char *)r->p + start, end - start);
}

/* Request header v1/v2's start: api key, version, correlation id, client id; 0 and the version, or -1. */
static int header_at(Reader *r, int api_key, int last_version, int *version, long *correlation, PyObject **client) {
    int key, client_length;
    if (int16_at(r, &key) < 0 || int16_at(r, version) < 0 || int32_at(r, correlation) < 0
        || int16_at(r, &client_length) < 0)
        return -1;
    if (key != api_key || *version < 0 || *version > last_version) return -1;
    if (client_length <= 0) {
        Py_INCREF(s_empty);
        *client = s_empty;
        return 0;
    }
    *client = text_at(r, client_length);
    return *client == NULL ? -1 : 0;
}

/* An array of (string, bytes) entries made by ``make(name, data)``: JoinGroup's protocols, SyncGroup's assignments. */
static PyObject *named_bytes_at(Reader *r, int64_t count, int compact, PyObject *make) {
    PyObject *entries = PyList_New(0);
    if (entries == NULL) return NULL;
    for (int64_t i = 0; i < count; i++) {
        PyObject *name = compact ? compact_string_at(r) : string16_at(r);
        if (name == NULL) goto fail;
        int64_t size;
        int bad;
        if (compact) {
            bad = compact_length_at(r, &size) < 0;
        } else {
            long size32 = 0;
            bad = int32_at(r, &size32) < 0;
            size = size32;
        }
        /* a null name or size, data past the end, or a compact entry's tagged fields */
        if (bad || name == Py_None || size < 0 || r->pos + size + compact > r->n
            || (compact && r->p[r->pos + size] != 0)) {
            Py_DECREF(name);
            goto fail;
        }
        PyObject *data = slice(r, r->pos, r->pos + (Py_ssize_t)size);
        r->pos += (Py_ssize_t)size + compact;
        PyObject *entry = data == NULL ? NULL : PyObject_CallFunctionObjArgs(make, name, data, NULL);
        Py_DECREF(name);
        Py_XDECREF(data);
        if (entry == NULL || PyList_Append(entries, entry) < 0) {
            Py_XDECREF(entry);
            goto fail; /* an error set: the caller gives it */
        }
        Py_DECREF(entry);
    }
    return entries;
fail:
    Py_DECREF(entries);
    return NULL;
}

/* The Python decoder's verdict, with the same arguments. */
static PyObject *delegate(PyObject *python, PyObject *const *args, Py_ssize_t nargs) {
    return PyObject_Vectorcall(python, args, (size_t)nargs, NULL);
}

/* The payload and its bound: 1 and the reader when the C reads it, 0 when it is over max_bytes (None), -1 to delegate
 * (not bytes, or a bad bound). */
static int start(PyObject *const *args, Py_ssize_t nargs, Reader *r) {
    if (nargs < 1 || nargs > 2 || !PyBytes_CheckExact(args[0])) return -1;
    Py_ssize_t bound = max_fast;
    if (nargs == 2) {
        if (args[1] == Py_None) {
            bound = PY_SSIZE_T_MAX;
        } else if (PyLong_CheckExact(args[1])) {
            bound = PyLong_AsSsize_t(args[1]);
            if (bound == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return -1;
            }
        } else {
            return -1;
        }
    }
    r->p = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    r->n = PyBytes_GET_SIZE(args[0]);
    r->pos = 0;
    return r->n > bound ? 0 : 1;
}

/* The C reads the payload (1), or *out holds the answer (0): None over the bound, or the Python decoder's verdict. */
static int opened(PyObject *const *args, Py_ssize_t nargs, PyObject *python, Reader *r, PyObject **out) {
    int begun = start(args, nargs, r);
    if (begun == 1) return 1;
    *out = begun == 0 ? Py_NewRef(Py_None) : delegate(python, args, nargs);
    return 0;
}

/* What a decoder has read: the header's correlation id and client id, the body's fields in its class's order (each a
 * new reference; NULL while not read). */
typedef struct {
    long correlation;
    PyObject *client;
    PyObject *f[10];
} Read;

static void release(Read *d) {
    Py_CLEAR(d->client);
    for (size_t i = 0; i < sizeof d->f / sizeof d->f[0]; i++) Py_CLEAR(d->f[i]);
}

/* (correlation id, client id, cls(*fields)), or NULL with an error. */
static PyObject *made(Read *d, PyObject *cls, int n) {
    PyObject *body = PyObject_Vectorcall(cls, d->f, n, NULL), *out = NULL;
    if (body != NULL) {
        PyObject *id = PyLong_FromLong(d->correlation);
        if (id != NULL) out = PyTuple_Pack(3, id, d->client, body);
        Py_XDECREF(id);
        Py_DECREF(body);
    }
    release(d);
    return out;
}

/* Input the C does not take: the Python decoder's verdict (or an error raised meanwhile: out of memory is no verdict
 * on the bytes). */
static PyObject *unusual(Read *d, PyObject *python, PyObject *const *args, Py_ssize_t nargs) {
    release(d);
    return PyErr_Occurred() ? NULL : delegate(python, args, nargs);
}

/* A flexible struct's tagged fields: only an empty set is taken. */
static int no_tags_at(Reader *r) {
    if (r->pos >= r->n || r->p[r->pos] != 0) return -1;
    r->pos++;
    return 0;
}

static PyObject *string_at(Reader *r, int compact) {
    return compact ? compact_string_at(r) : string16_at(r);
}

/* An array's length: compact, or an int32. */
static int count_at(Reader *r, int compact, int64_t *count) {
    if (compact) return compact_length_at(r, count);
    long count32;
    if (int32_at(r, &count32) < 0) return -1;
    *count = count32;
    return 0;
}

#define READ(var, expr)                \
    do {                               \
        var = (expr);                  \
        if (var == NULL) goto unusual; \
    } while (0)

enum { J_VERSION, J_GROUP, J_SESSION, J_REBALANCE, J_MEMBER, J_INSTANCE, J_TYPE, J_PROTOCOLS, J_REASON, J_KEY, J_N };

static PyObject *decode_join_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Reader r;
    PyObject *out;
    if (!opened(args, nargs, py_decode_join, &r, &out)) return out;
    Read d = {0};
    PyObject **f = d.f;
    int version;
    long session, rebalance = -1;
    int64_t count;
    if (header_at(&r, JOIN_KEY, JOIN_LAST, &version, &d.correlation, &d.client) < 0) goto unusual;
    int compact = version >= JOIN_FLEXIBLE;
    if (compact && no_tags_at(&r) < 0) goto unusual; /* the header's */
    READ(f[J_GROUP], string_at(&r, compact));
    if (int32_at(&r, &session) < 0 || ((compact || version >= 1) && int32_at(&r, &rebalance) < 0)) goto unusual;
    READ(f[J_MEMBER], string_at(&r, compact));
    READ(f[J_INSTANCE], compact || version >= 5 ? string_at(&r, compact) : Py_NewRef(Py_None));
    READ(f[J_TYPE], string_at(&r, compact));
    if (count_at(&r, compact, &count) < 0) goto unusual;
    Py_ssize_t from = r.pos;
    READ(f[J_PROTOCOLS], named_bytes_at(&r, count, compact, JoinProtocol));
    READ(f[J_KEY], slice(&r, from, r.pos));
    READ(f[J_REASON], compact && version >= 8 ? compact_string_at(&r) : Py_NewRef(Py_None));
    if ((compact && no_tags_at(&r) < 0) || f[J_GROUP] == Py_None || f[J_MEMBER] == Py_None || f[J_TYPE] == Py_None
        || count < 0 || r.pos != r.n)
        goto unusual;
    READ(f[J_VERSION], PyLong_FromLong(version));
    READ(f[J_SESSION], PyLong_FromLong(session));
    READ(f[J_REBALANCE], PyLong_FromLong(rebalance));
    return made(&d, JoinRequest, J_N);
unusual:
    return unusual(&d, py_decode_join, args, nargs);
}

enum { S_VERSION, S_GROUP, S_GENERATION, S_MEMBER, S_INSTANCE, S_TYPE, S_NAME, S_ASSIGNMENTS, S_N };

static PyObject *decode_sync_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Reader r;
    PyObject *out;
    if (!opened(args, nargs, py_decode_sync, &r, &out)) return out;
    Read d = {0};
    PyObject **f = d.f;
    int version;
    long generation;
    int64_t count;
    if (header_at(&r, SYNC_KEY, SYNC_LAST, &version, &d.correlation, &d.client) < 0) goto unusual;
    int compact = version >= SYNC_FLEXIBLE;
    if (compact && no_tags_at(&r) < 0) goto unusual;
    READ(f[S_GROUP], string_at(&r, compact));
    if (int32_at(&r, &generation) < 0) goto unusual;
    READ(f[S_MEMBER], string_at(&r, compact));
    READ(f[S_INSTANCE], compact || version >= 3 ? string_at(&r, compact) : Py_NewRef(Py_None));
    READ(f[S_TYPE], compact && version >= 5 ? compact_string_at(&r) : Py_NewRef(Py_None));
    READ(f[S_NAME], compact && version >= 5 ? compact_string_at(&r) : Py_NewRef(Py_None));
    if (count_at(&r, compact, &count) < 0) goto unusual;
    READ(f[S_ASSIGNMENTS], named_bytes_at(&r, count, compact, SyncAssignment));
    if ((compact && no_tags_at(&r) < 0) || f[S_GROUP] == Py_None || f[S_MEMBER] == Py_None || count < 0
        || r.pos != r.n)
        goto unusual;
    READ(f[S_VERSION], PyLong_FromLong(version));
    READ(f[S_GENERATION], PyLong_FromLong(generation));
    return made(&d, SyncRequest, S_N);
unusual:
    return unusual(&d, py_decode_sync, args, nargs);
}

/* -- writing ------------------------------------------------------------------------------------------------------ */

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
    char local[1024];
} Writer;

static void writer_init(Writer *w) {
    w->buf = w->local;
    w->len = 0;
    w->cap = sizeof w->local;
}

static void writer_free(Writer *w) {
    if (w->buf != w->local) PyMem_Free(w->buf);
}

static int reserve(Writer *w, Py_ssize_t more) {
    if (w->len + more <= w->cap) return 0;
    Py_ssize_t cap = w->cap;
    while (cap < w->len + more) cap *= 2;
    char *grown = w->buf == w->local ? PyMem_Malloc(cap) : PyMem_Realloc(w->buf, cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (w->buf == w->local) memcpy(grown, w->local, w->len);
    w->buf = grown;
    w->cap = cap;
    return 0;
}

static int put(Writer *w, const void *data, Py_ssize_t n) {
    if (reserve(w, n) < 0) return -1;
    memcpy(w->buf + w->len, data, n);
    w->len += n;
    return 0;
}

static int put_int(Writer *w, int64_t value, int size) {
    unsigned char raw[4];
    for (int i = size - 1; i >= 0; i--, value >>= 8) raw[i] = (unsigned char)(value & 0xFF);
    return put(w, raw, size);
}

static int put_uvarint(Writer *w, uint64_t value) {
    unsigned char raw[10];
    int n = 0;
    while (value > 0x7F) {
        raw[n++] = (unsigned char)((value & 0x7F) | 0x80);
        value >>= 7;
    }
    raw[n++] = (unsigned char)value;
    return put(w, raw, n);
}

/* Outcomes of the writers below: 0 written, 1 not the usual shape (the Python encoder decides), -1 an error. */

/* An exact int within [low, high]. */
static int int_of(PyObject *value, long low, long high, long *out) {
    if (value == NULL) return -1;
    if (!PyLong_CheckExact(value)) return 1;
    int overflow;
    long v = PyLong_AsLongAndOverflow(value, &overflow);
    if (overflow || v < low || v > high) return 1;
    *out = v;
    return 0;
}

static int put_attr_int(Writer *w, PyObject *obj, PyObject *name, int size) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) {
        PyErr_Clear();
        return 1;
    }
    long v;
    long low = size == 2 ? -32768L : -2147483648L, high = size == 2 ? 32767L : 2147483647L;
    int got = int_of(value, low, high, &v);
    Py_DECREF(value);
    return got != 0 ? got : (put_int(w, v, size) < 0 ? -1 : 0);
}

/* A string in the classic (int16 length) or compact (varint length + 1) form; null allowed only if ``nullable``. */
static int put_string(Writer *w, PyObject *value, int compact, int nullable) {
    if (value == Py_None) {
        if (!nullable) return 1;
        return compact ? put(w, "\x00", 1) : put(w, "\xff\xff", 2);
    }
    if (!PyUnicode_CheckExact(value)) return 1;
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(value, &n);
    if (utf8 == NULL) {
        PyErr_Clear(); /* surrogates: the Python encoder raises its own error */
        return 1;
    }
    if (compact) {
        if (put_uvarint(w, (uint64_t)n + 1) < 0) return -1;
    } else {
        if (n > 32767) return 1;
        if (put_int(w, n, 2) < 0) return -1;
    }
    return put(w, utf8, n) < 0 ? -1 : 0;
}

static int put_attr_string(Writer *w, PyObject *obj, PyObject *name, int compact, int nullable) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) {
        PyErr_Clear();
        return 1;
    }
    int got = put_string(w, value, compact, nullable);
    Py_DECREF(value);
    return got;
}

/* Bytes in the classic (int32 length) or compact form, then a compact entry's empty tagged fields if ``tags``. */
static int put_attr_bytes(Writer *w, PyObject *obj, PyObject *name, int compact, int tags) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) {
        PyErr_Clear();
        return 1;
    }
    int got = 1;
    if (PyBytes_CheckExact(value)) {
        Py_ssize_t n = PyBytes_GET_SIZE(value);
        got = (compact ? put_uvarint(w, (uint64_t)n + 1) : (n > 2147483647 ? 1 : put_int(w, n, 4)));
        if (got == 0) got = put(w, PyBytes_AS_STRING(value), n);
        if (got == 0 && tags) got = put(w, "\x00", 1);
    }
    Py_DECREF(value);
    return got;
}

/* The answer's bytes: size, correlation id, (flexible: response header v1's empty tagged fields), body, (body's tags).
 * The writer began with HEAD bytes left for the frame's start. 0 and the bytes, 1 (over 2 GiB) or -1. */
enum { HEAD = 9 };

static int framed(Writer *w, long correlation, int flexible, PyObject **out) {
    if (flexible && put(w, "\x00", 1) < 0) return -1;
    Py_ssize_t head = flexible ? 9 : 8, skip = HEAD - head;
    Py_ssize_t size = w->len - HEAD + head - 4;
    if (size > 2147483647) return 1;
    unsigned char *p = (unsigned char *)w->buf + skip;
    for (int i = 3; i >= 0; i--, size >>= 8) p[i] = (unsigned char)(size & 0xFF);
    uint32_t c = (uint32_t)correlation;
    for (int i = 7; i >= 4; i--, c >>= 8) p[i] = (unsigned char)(c & 0xFF);
    if (flexible) p[8] = 0;
    *out = PyBytes_FromStringAndSize(w->buf + skip, w->len - skip);
    return *out == NULL ? -1 : 0;
}

#define PUT(expr)                \
    do {                         \
        int got_ = (expr);       \
        if (got_ != 0) return got_; \
    } while (0)

static int version_of(PyObject *response, long *version) {
    PyObject *value = PyObject_GetAttr(response, s_version);
    if (value == NULL) {
        PyErr_Clear();
        return 1;
    }
    int got = int_of(value, -2147483647L, 2147483647L, version);
    Py_DECREF(value);
    return got;
}

static int join_members(Writer *w, PyObject *response, long version, int compact) {
    PyObject *members = PyObject_GetAttr(response, s_members);
    if (members == NULL) {
        PyErr_Clear();
        return 1;
    }
    int got = 1;
    if (PyTuple_CheckExact(members) || PyList_CheckExact(members)) {
        PyObject *fast = members;
        Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
        got = compact ? put_uvarint(w, (uint64_t)count + 1) : (count > 2147483647 ? 1 : put_int(w, count, 4));
        for (Py_ssize_t i = 0; got == 0 && i < PySequence_Fast_GET_SIZE(fast); i++) {
            PyObject *member = PySequence_Fast_GET_ITEM(fast, i);
            Py_INCREF(member);
            got = put_attr_string(w, member, s_member_id, compact, 0);
            if (got == 0 && (compact || version >= 5)) got = put_attr_string(w, member, s_instance, compact, 1);
            if (got == 0) got = put_attr_bytes(w, member, s_metadata, compact, compact);
            Py_DECREF(member);
        }
    }
    Py_DECREF(members);
    return got;
}

/* A JoinGroup answer's body: the classic form before v6, compact from v6. */
static int join_body(Writer *w, PyObject *response, long version) {
    int compact = version >= JOIN_FLEXIBLE;
    if (compact || version >= 2) PUT(put_attr_int(w, response, s_throttle, 4));
    PUT(put_attr_int(w, response, s_error, 2));
    PUT(put_attr_int(w, response, s_generation, 4));
    if (compact && version >= 7) {
        PUT(put_attr_string(w, response, s_protocol_type, 1, 1));
        PUT(put_attr_string(w, response, s_protocol_name, 1, 1));
    } else {
        PUT(put_attr_string(w, response, s_protocol_name, compact, 0));
    }
    PUT(put_attr_string(w, response, s_leader, compact, 0));
    if (compact && version >= 9) {
        PyObject *skip = PyObject_GetAttr(response, s_skip);
        int truth = skip == NULL ? -1 : PyObject_IsTrue(skip);
        Py_XDECREF(skip);
        if (truth < 0) {
            PyErr_Clear();
            return 1;
        }
        PUT(put(w, truth ? "\x01" : "\x00", 1));
    }
    PUT(put_attr_string(w, response, s_member_id, compact, 0));
    return join_members(w, response, version, compact);
}

/* A SyncGroup answer's body: the classic form before v4, compact from v4. */
static int sync_body(Writer *w, PyObject *response, long version) {
    int compact = version >= SYNC_FLEXIBLE;
    if (compact || version >= 1) PUT(put_attr_int(w, response, s_throttle, 4));
    PUT(put_attr_int(w, response, s_error, 2));
    if (compact && version >= 5) {
        PUT(put_attr_string(w, response, s_protocol_type, 1, 1));
        PUT(put_attr_string(w, response, s_protocol_name, 1, 1));
    }
    return put_attr_bytes(w, response, s_assignment, compact, 0);
}

/* encode_*_response(response, correlation_id): the body written by ``body``, framed; anything it does not take goes to
 * ``python`` with the same arguments. */
static PyObject *encode(PyObject *const *args, Py_ssize_t nargs, PyObject *python, int flexible_from,
                        int (*body)(Writer *, PyObject *, long)) {
    long version, correlation;
    if (nargs != 2 || version_of(args[0], &version) != 0 || int_of(args[1], -2147483648L, 2147483647L, &correlation)) {
        if (PyErr_Occurred()) PyErr_Clear();
        return delegate(python, args, nargs);
    }
    PyObject *out = NULL;
    Writer w;
    writer_init(&w);
    w.len = HEAD;
    int got = body(&w, args[0], version);
    if (got == 0) got = framed(&w, correlation, version >= flexible_from, &out);
    writer_free(&w);
    return got == 1 ? delegate(python, args, nargs) : out;
}

static PyObject *encode_join_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return encode(args, nargs, py_encode_join, JOIN_FLEXIBLE, join_body);
}

static PyObject *encode_sync_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return encode(args, nargs, py_encode_sync, SYNC_FLEXIBLE, sync_body);
}

/* -- the module --------------------------------------------------------------------------------------------------- */

static PyObject *setup(PyObject *self, PyObject *args) {
    PyObject *classes, *python;
    Py_ssize_t bound;
    if (!PyArg_ParseTuple(args, "O!O!n", &PyTuple_Type, &classes, &PyTuple_Type, &python, &bound)) return NULL;
    PyObject *c[4], *p[4];
    if (!PyArg_ParseTuple(classes, "OOOO", &c[0], &c[1], &c[2], &c[3])
        || !PyArg_ParseTuple(python, "OOOO", &p[0], &p[1], &p[2], &p[3]))
        return NULL;
    PyObject **slots[] = {&JoinProtocol, &JoinRequest, &SyncAssignment, &SyncRequest,
                          &py_decode_join, &py_decode_sync, &py_encode_join, &py_encode_sync};
    for (int i = 0; i < 8; i++) {
        PyObject *value = i < 4 ? c[i] : p[i - 4];
        Py_INCREF(value);
        Py_XSETREF(*slots[i], value);
    }
    max_fast = bound;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", (PyCFunction)setup, METH_VARARGS,
     "setup(classes, python, max_fast_bytes): the body classes and the Python functions of classic_group_codec.py"},
    {"decode_join_request", (PyCFunction)(void (*)(void))decode_join_request, METH_FASTCALL,
     "decode_join_request(payload, max_bytes=max_fast_bytes) -> (correlation id, client id, body) or None"},
    {"decode_sync_request", (PyCFunction)(void (*)(void))decode_sync_request, METH_FASTCALL,
     "decode_sync_request(payload, max_bytes=max_fast_bytes) -> (correlation id, client id, body) or None"},
    {"encode_join_response", (PyCFunction)(void (*)(void))encode_join_response, METH_FASTCALL,
     "encode_join_response(response, correlation_id) -> the framed answer, or None for the generic codec"},
    {"encode_sync_response", (PyCFunction)(void (*)(void))encode_sync_response, METH_FASTCALL,
     "encode_sync_response(response, correlation_id) -> the framed answer, or None for the generic codec"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_classic_group",
    "The classic JoinGroup/SyncGroup fast path in C (protocol/classic_group_codec.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__classic_group(void) {
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {
        {&s_version, "version"}, {&s_throttle, "throttle_time_ms"}, {&s_error, "error_code"},
        {&s_generation, "generation_id"}, {&s_protocol_type, "protocol_type"}, {&s_protocol_name, "protocol_name"},
        {&s_leader, "leader"}, {&s_skip, "skip_assignment"}, {&s_member_id, "member_id"}, {&s_members, "members"},
        {&s_instance, "group_instance_id"}, {&s_metadata, "metadata"}, {&s_assignment, "assignment"},
        {&s_empty, ""},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (*names[i].slot == NULL && (*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL) {
            return NULL;
        }
    }
    return PyModule_Create(&module);
}
