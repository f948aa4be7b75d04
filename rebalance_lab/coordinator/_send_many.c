/* A network thread for the event loop: answers sent on their sockets without the GIL (issue 22; coordinator/sender.py).
 *
 * Worker(wake_fd) starts one POSIX thread that never runs Python and never takes the GIL, as Kafka's network threads
 * send beside its request handlers. On the loop's thread (holding the GIL):
 *
 *   submit(fd, answer, token)           keep ``answer`` (bytes, referenced, not copied) for ``fd`` under ``token``
 *   flush()                             hand what was submitted to the thread, which sends it in that order
 *   take() -> list of (token, sent)     what the thread has finished: the bytes each send took (possibly fewer than
 *                                       the answer's length) or -errno (-ECANCELED: forgotten before its send)
 *   forget(fd)                          the loop is about to close ``fd``: an answer for it not yet sent is not sent,
 *                                       and on return no send on it is under way (one never blocks: MSG_DONTWAIT)
 *   close()                             send what was handed over, then end the thread (joined without the GIL)
 *
 * Each answer is sent once with MSG_DONTWAIT | MSG_NOSIGNAL (never blocks, never raises SIGPIPE) on the socket's own
 * descriptor. Each descriptor number has a generation, which forget() moves on: an answer carries the generation it
 * was submitted in and is sent only if it is still current, checked under the lock just before the send, so a
 * connection the loop closes (after forget) never has its number, reused by another, sent to. After a
 * batch, the thread writes one byte to ``wake_fd`` (a non-blocking pipe the loop reads) unless it did so since the
 * last take(): the loop wakes once per batch, not per answer. The answers stay referenced until take() (the thread
 * only reads their immutable buffers); their references are dropped there, on the loop, with the GIL.
 *
 * Built with the compiled modules by `python -m rebalance_lab.compiled build` (rebalance_lab/compiled.py, native.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

typedef struct {
    int fd;                 /* the socket's own descriptor */
    unsigned generation;    /* the descriptor's generation at submit(): sent only while still current */
    PyObject *answer;       /* bytes, a reference kept until take() */
    long long token;
    Py_ssize_t sent;        /* bytes sent, or -errno */
} Item;

typedef struct {
    Item *items;
    Py_ssize_t count, capacity;
} Items;

typedef struct {
    PyObject_HEAD
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t ready;
    Items pending;          /* submitted, not yet flushed: the loop's only (no lock) */
    Items handed;           /* flushed, for the thread (lock) */
    Items finished;         /* sent, for take() (lock) */
    int wake_fd;
    int woken;              /* a byte written to wake_fd since the last take() (lock) */
    int waiting;            /* the thread waits for a hand-over (lock) */
    int closing;            /* close(): the thread ends once ``handed`` is empty (lock) */
    unsigned *generations;  /* by descriptor number: written by the loop only, read by the thread under the lock */
    int generation_count;
    int sending;            /* the descriptor the thread sends on now, or -1 (lock) */
    pthread_cond_t sent;    /* a send ended: forget() waits for one on its descriptor */
    int started, joined;
} Worker;

static int items_reserve(Items *list, Py_ssize_t more) {
    if (list->count + more <= list->capacity) {
        return 0;
    }
    Py_ssize_t capacity = list->capacity ? list->capacity : 64;
    while (capacity < list->count + more) {
        capacity *= 2;
    }
    Item *grown = PyMem_RawRealloc(list->items, (size_t)capacity * sizeof(Item));
    if (grown == NULL) {
        return -1;
    }
    list->items = grown;
    list->capacity = capacity;
    return 0;
}

/* Move every item of ``from`` to the end of ``to``; -1 (nothing moved) if ``to`` cannot grow. */
static int items_move(Items *to, Items *from) {
    if (from->count == 0) {
        return 0;
    }
    if (to->count == 0 && to->capacity <= from->capacity) { /* swap the buffers: no copy */
        Items swapped = *to;
        *to = *from;
        from->items = swapped.items;
        from->capacity = swapped.capacity;
        from->count = 0;
        return 0;
    }
    if (items_reserve(to, from->count) < 0) {
        return -1;
    }
    memcpy(to->items + to->count, from->items, (size_t)from->count * sizeof(Item));
    to->count += from->count;
    from->count = 0;
    return 0;
}

static void *worker_main(void *arg) {
    Worker *self = arg;
    Items batch = {NULL, 0, 0};
    pthread_mutex_lock(&self->lock);
    for (;;) {
        while (self->handed.count == 0 && !self->closing) {
            self->waiting = 1; /* flush() signals only then: no futex call while the thread is busy */
            pthread_cond_wait(&self->ready, &self->lock);
            self->waiting = 0;
        }
        if (self->handed.count == 0) { /* closing, and nothing left */
            break;
        }
        Items swapped = batch; /* take the whole hand-over; ``batch`` is empty here */
        batch = self->handed;
        self->handed = swapped;
        pthread_mutex_unlock(&self->lock);
        for (Py_ssize_t i = 0; i < batch.count; i++) {
            Item *item = &batch.items[i];
            pthread_mutex_lock(&self->lock);
            int current = item->generation == self->generations[item->fd];
            self->sending = current ? item->fd : -1;
            pthread_mutex_unlock(&self->lock);
            if (!current) {
                item->sent = -ECANCELED; /* forgotten: the loop closed it, its number may be another's now */
                continue;
            }
            ssize_t r;
            do {
                r = send(item->fd, PyBytes_AS_STRING(item->answer), (size_t)PyBytes_GET_SIZE(item->answer),
                         MSG_DONTWAIT | MSG_NOSIGNAL);
            } while (r < 0 && errno == EINTR);
            item->sent = r < 0 ? -(Py_ssize_t)errno : (Py_ssize_t)r;
            pthread_mutex_lock(&self->lock);
            self->sending = -1;
            pthread_cond_broadcast(&self->sent);
            pthread_mutex_unlock(&self->lock);
        }
        pthread_mutex_lock(&self->lock);
        while (items_move(&self->finished, &batch) < 0) { /* no memory: retry after the loop takes some */
            pthread_mutex_unlock(&self->lock);
            usleep(1000);
            pthread_mutex_lock(&self->lock);
        }
        if (!self->woken) {
            self->woken = 1;
            pthread_mutex_unlock(&self->lock);
            ssize_t w;
            do {
                w = write(self->wake_fd, "w", 1); /* a full pipe already wakes the loop */
            } while (w < 0 && errno == EINTR);
            pthread_mutex_lock(&self->lock);
        }
    }
    pthread_mutex_unlock(&self->lock);
    PyMem_RawFree(batch.items);
    return NULL;
}

static int Worker_init(Worker *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"wake_fd", NULL};
    int wake_fd;
    if (self->started) {
        PyErr_SetString(PyExc_RuntimeError, "Worker: already started");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "i:Worker", keywords, &wake_fd)) {
        return -1;
    }
    if (wake_fd < 0) {
        PyErr_SetString(PyExc_ValueError, "Worker: wake_fd must be a descriptor");
        return -1;
    }
    self->wake_fd = wake_fd;
    self->sending = -1;
    if (pthread_mutex_init(&self->lock, NULL) != 0 || pthread_cond_init(&self->ready, NULL) != 0
            || pthread_cond_init(&self->sent, NULL) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "Worker: cannot make its lock");
        return -1;
    }
    int error = pthread_create(&self->thread, NULL, worker_main, self);
    if (error != 0) {
        errno = error;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    self->started = 1;
    return 0;
}

static PyObject *Worker_submit(Worker *self, PyObject *args) {
    int fd;
    PyObject *answer;
    long long token;
    if (!PyArg_ParseTuple(args, "iO!L:submit", &fd, &PyBytes_Type, &answer, &token)) {
        return NULL;
    }
    if (!self->started || self->closing) {
        PyErr_SetString(PyExc_ValueError, "submit: the worker is closed");
        return NULL;
    }
    if (fd < 0) {
        errno = EBADF;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (items_reserve(&self->pending, 1) < 0) {
        return PyErr_NoMemory();
    }
    if (fd >= self->generation_count) { /* the thread reads the array under the lock: grown under it */
        int count = self->generation_count ? self->generation_count : 1024;
        while (count <= fd) {
            count *= 2;
        }
        pthread_mutex_lock(&self->lock);
        unsigned *grown = PyMem_RawRealloc(self->generations, (size_t)count * sizeof(unsigned));
        if (grown != NULL) {
            memset(grown + self->generation_count, 0, (size_t)(count - self->generation_count) * sizeof(unsigned));
            self->generations = grown;
            self->generation_count = count;
        }
        pthread_mutex_unlock(&self->lock);
        if (grown == NULL) {
            return PyErr_NoMemory();
        }
    }
    Py_INCREF(answer);
    self->pending.items[self->pending.count++] = (Item){fd, self->generations[fd], answer, token, 0};
    Py_RETURN_NONE;
}

static PyObject *Worker_forget(Worker *self, PyObject *arg) {
    long fd = PyLong_AsLong(arg);
    if (fd == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (!self->started || fd < 0 || fd >= self->generation_count) {
        Py_RETURN_NONE; /* never submitted for: nothing to forget */
    }
    pthread_mutex_lock(&self->lock);
    self->generations[fd]++;
    while (self->sending == (int)fd) { /* a send under way: microseconds, it never blocks */
        pthread_cond_wait(&self->sent, &self->lock);
    }
    pthread_mutex_unlock(&self->lock);
    Py_RETURN_NONE;
}

static PyObject *Worker_flush(Worker *self, PyObject *unused) {
    if (self->pending.count == 0) {
        Py_RETURN_NONE;
    }
    int moved;
    pthread_mutex_lock(&self->lock);
    moved = items_move(&self->handed, &self->pending);
    if (moved == 0 && self->waiting) {
        pthread_cond_signal(&self->ready);
    }
    pthread_mutex_unlock(&self->lock);
    if (moved < 0) {
        return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

static PyObject *Worker_take(Worker *self, PyObject *unused) {
    Items done = {NULL, 0, 0};
    pthread_mutex_lock(&self->lock);
    done = self->finished;
    self->finished = (Items){NULL, 0, 0};
    self->woken = 0;
    pthread_mutex_unlock(&self->lock);
    PyObject *result = PyList_New(done.count);
    for (Py_ssize_t i = 0; result != NULL && i < done.count; i++) {
        PyObject *pair = Py_BuildValue("(Ln)", done.items[i].token, done.items[i].sent);
        if (pair == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, pair);
    }
    if (result == NULL) { /* keep them for the next take() */
        pthread_mutex_lock(&self->lock);
        int kept = items_move(&done, &self->finished) == 0;
        if (kept) {
            Items swapped = self->finished;
            self->finished = done;
            done = swapped;
        }
        pthread_mutex_unlock(&self->lock);
        if (kept) {
            PyMem_RawFree(done.items);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < done.count; i++) {
        Py_DECREF(done.items[i].answer);
    }
    PyMem_RawFree(done.items);
    return result;
}

static void worker_join(Worker *self) {
    if (!self->started || self->joined) {
        return;
    }
    pthread_mutex_lock(&self->lock);
    self->closing = 1;
    pthread_cond_signal(&self->ready);
    pthread_mutex_unlock(&self->lock);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(self->thread, NULL);
    Py_END_ALLOW_THREADS
    self->joined = 1;
}

static PyObject *Worker_close(Worker *self, PyObject *unused) {
    if (self->started && !self->joined) {
        PyObject *flushed = Worker_flush(self, NULL);
        if (flushed == NULL) {
            return NULL;
        }
        Py_DECREF(flushed);
        worker_join(self);
    }
    Py_RETURN_NONE;
}

static void items_drop(Items *list) {
    for (Py_ssize_t i = 0; i < list->count; i++) {
        Py_DECREF(list->items[i].answer);
    }
    PyMem_RawFree(list->items);
    *list = (Items){NULL, 0, 0};
}

static void Worker_dealloc(Worker *self) {
    if (self->started) {
        worker_join(self); /* what was handed over is sent first */
        pthread_mutex_destroy(&self->lock);
        pthread_cond_destroy(&self->ready);
        pthread_cond_destroy(&self->sent);
    }
    items_drop(&self->pending);
    items_drop(&self->handed);
    items_drop(&self->finished);
    PyMem_RawFree(self->generations);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef worker_methods[] = {
    {"submit", (PyCFunction)Worker_submit, METH_VARARGS,
     "submit(fd, answer, token): keep answer for fd, to be sent once flushed"},
    {"forget", (PyCFunction)Worker_forget, METH_O,
     "forget(fd): fd is about to be closed: send nothing more on it (a send under way is waited for)"},
    {"flush", (PyCFunction)Worker_flush, METH_NOARGS, "flush(): hand what was submitted to the thread"},
    {"take", (PyCFunction)Worker_take, METH_NOARGS, "take() -> [(token, sent)]: the answers the thread finished"},
    {"close", (PyCFunction)Worker_close, METH_NOARGS, "close(): send what was handed over, then end the thread"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WorkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rebalance_lab.coordinator._send_many.Worker",
    .tp_doc = "Worker(wake_fd): one thread that sends answers without the GIL (coordinator/sender.py)",
    .tp_basicsize = sizeof(Worker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Worker_init,
    .tp_dealloc = (destructor)Worker_dealloc,
    .tp_methods = worker_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_send_many", "A thread that sends answers without the GIL (coordinator/sender.py).", -1,
    NULL,
};

PyMODINIT_FUNC PyInit__send_many(void) {
    if (PyType_Ready(&WorkerType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&WorkerType);
    if (PyModule_AddObject(m, "Worker", (PyObject *)&WorkerType) < 0) {
        Py_DECREF(&WorkerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
