/* A network thread for the event loop: requests read from their sockets without the GIL (issue 22;
 * coordinator/receiver.py).
 *
 * Reader(wake_fd, connection_cap, total_cap) starts one POSIX thread that never runs Python and never takes the GIL,
 * as Kafka's network threads (its processors) read requests beside its request handlers. The thread waits on its own
 * epoll set and reads each watched socket as its bytes arrive; the loop takes what was read in batches. On the loop's
 * thread (holding the GIL):
 *
 *   watch(fd) -> token or None          read ``fd`` from now on; None if it cannot (the epoll set refused it)
 *   take() -> list of (token, chunk)    what the thread read since the last take(), in order per connection: bytes,
 *                                       or 0 at the end of the stream, or -errno (the socket is then read no more);
 *                                       MemoryError keeps them for the next take(), OSError(ENOMEM) lost them
 *   pause(token), resume(token)         stop reading a connection, and start again (the reader's backpressure)
 *   unwatch(token)                      read it no more: on return no read of it is under way or will start, so the
 *                                       caller may close the descriptor (a read under way is waited for: it never
 *                                       blocks, MSG_DONTWAIT)
 *   close()                             end the thread (joined without the GIL)
 *
 * The loop closes a socket only after unwatch(), so its descriptor number is never reused under a read; a token names
 * a slot and its generation, so a readiness the thread took before unwatch() never reads a slot used again. Each read
 * takes at most READ_SIZE bytes (asyncio's own), non-blocking. What was read and not yet taken, each chunk counted
 * with CHUNK_COST bytes of bookkeeping beside its data (a peer sending byte by byte cannot pile up chunks the bound
 * does not see), is bounded per connection (``connection_cap``: the socket is not read again until the loop takes some) and in all
 * (``total_cap``: the thread waits); the bytes the loop does not take stay in the kernel's socket buffer, which holds
 * the peer back as the loop's own reads would. After a batch the thread writes one byte to ``wake_fd`` (a
 * non-blocking pipe the loop reads) unless it did so since the last take(): the loop wakes once per batch.
 *
 * Built with the compiled modules by `python -m rebalance_lab.compiled build` (rebalance_lab/compiled.py, native.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define READ_SIZE (256 * 1024) /* asyncio's max_size for a socket transport's read */
#define EVENTS 256
#define STOP_KEY UINT64_MAX /* the eventfd close() writes to */
#define CHUNK_COST 64 /* a chunk's bookkeeping beside its data: its entry and its allocation's header */

typedef struct {
    int fd;                 /* the socket the thread reads (the loop's); -1 when the slot is free */
    uint32_t generation;    /* a token names (slot, generation): a stale token never matches a reused slot */
    int busy;               /* the thread reads it now, without the lock */
    int paused, capped;     /* not read: the loop paused it / too much of it not yet taken */
    int ended;              /* end of stream or an error was read: read no more */
    int registered;         /* in the epoll set: only while read (EPOLLHUP and EPOLLERR come regardless of the mask) */
    Py_ssize_t outstanding; /* bytes read, not yet taken, with CHUNK_COST each */
} Slot;

typedef struct {
    uint64_t token;
    char *data;             /* PyMem_RawMalloc'ed, or NULL for an end or an error */
    Py_ssize_t size;        /* bytes, or 0 (end of stream) or -errno */
} Chunk;

typedef struct {
    PyObject_HEAD
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t room;    /* take() made room under total_cap */
    pthread_cond_t idle;    /* a read under way ended (unwatch() waits for it) */
    int epoll_fd, stop_fd, wake_fd;
    Slot *slots;            /* (lock) */
    Py_ssize_t slot_count, slot_capacity;
    Py_ssize_t *free_slots; /* (lock) */
    Py_ssize_t free_count;
    Chunk *chunks;          /* read, for take() (lock) */
    Py_ssize_t chunk_count, chunk_capacity;
    Py_ssize_t connection_cap, total_cap, total; /* (lock) */
    int woken;              /* a byte written to wake_fd since the last take() (lock) */
    int closing;            /* (lock) */
    int started, joined;
} Reader;

static uint64_t token_of(Py_ssize_t slot, uint32_t generation) {
    return ((uint64_t)slot << 32) | generation;
}

/* The slot ``token`` names, or NULL if it is free or reused since (lock held). */
static Slot *slot_of(Reader *self, uint64_t token) {
    Py_ssize_t index = (Py_ssize_t)(token >> 32);
    if (index >= self->slot_count) {
        return NULL;
    }
    Slot *slot = &self->slots[index];
    return slot->fd >= 0 && slot->generation == (uint32_t)token ? slot : NULL;
}

static void slot_free(Reader *self, Slot *slot) { /* lock held, not busy */
    if (slot->registered) {
        epoll_ctl(self->epoll_fd, EPOLL_CTL_DEL, slot->fd, NULL);
        slot->registered = 0;
    }
    slot->fd = -1;
    slot->generation++;
    self->free_slots[self->free_count++] = slot - self->slots;
}

/* In the epoll set exactly while it is to be read (lock held); -1 with errno if epoll_ctl failed. */
static int set_reading(Reader *self, Slot *slot, uint64_t token) {
    int wanted = !slot->paused && !slot->capped && !slot->ended;
    if (wanted == slot->registered) {
        return 0;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data = {.u64 = token}};
    if (epoll_ctl(self->epoll_fd, wanted ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, slot->fd, &ev) < 0) {
        return -1;
    }
    slot->registered = wanted;
    return 0;
}

static int chunks_append(Reader *self, Chunk chunk) { /* lock held */
    if (self->chunk_count == self->chunk_capacity) {
        Py_ssize_t capacity = self->chunk_capacity ? 2 * self->chunk_capacity : 256;
        Chunk *grown = PyMem_RawRealloc(self->chunks, (size_t)capacity * sizeof(Chunk));
        if (grown == NULL) {
            return -1;
        }
        self->chunks = grown;
        self->chunk_capacity = capacity;
    }
    self->chunks[self->chunk_count++] = chunk;
    return 0;
}

/* One ready socket read once (lock held on entry and on return). */
static void read_one(Reader *self, uint64_t token, char *buffer) {
    Slot *slot = slot_of(self, token);
    if (slot == NULL || slot->paused || slot->capped || slot->ended) {
        return; /* unwatched, paused or capped since epoll_wait reported it */
    }
    int fd = slot->fd;
    slot->busy = 1;
    pthread_mutex_unlock(&self->lock);
    ssize_t r;
    do {
        r = recv(fd, buffer, READ_SIZE, MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    int error = r < 0 ? errno : 0;
    char *data = NULL;
    if (r > 0) {
        data = PyMem_RawMalloc((size_t)r);
        if (data != NULL) {
            memcpy(data, buffer, (size_t)r);
        }
    }
    pthread_mutex_lock(&self->lock);
    slot = &self->slots[token >> 32]; /* the array may have grown meanwhile; the slot is still ours (busy) */
    slot->busy = 0;
    pthread_cond_broadcast(&self->idle);
    if (r < 0 && (error == EAGAIN || error == EWOULDBLOCK)) {
        return;
    }
    if (r > 0 && data == NULL) {
        r = -1; /* no memory for bytes already read: the connection ends with ENOMEM, never with a gap */
        error = ENOMEM;
    }
    Chunk chunk = {token, data, r >= 0 ? (Py_ssize_t)r : -(Py_ssize_t)error};
    while (chunks_append(self, chunk) < 0) { /* no memory: wait for the loop to take some */
        pthread_mutex_unlock(&self->lock);
        usleep(1000);
        pthread_mutex_lock(&self->lock);
    }
    slot = &self->slots[token >> 32];
    if (r > 0) {
        slot->outstanding += r + CHUNK_COST;
        self->total += r + CHUNK_COST;
        slot->capped = slot->outstanding >= self->connection_cap;
    } else {
        slot->ended = 1;
    }
    set_reading(self, slot, token); /* DEL cannot fail for a descriptor in the set */
}

static void *reader_main(void *arg) {
    Reader *self = arg;
    struct epoll_event events[EVENTS];
    char *buffer = PyMem_RawMalloc(READ_SIZE);
    if (buffer == NULL) {
        return NULL;
    }
    for (;;) {
        int n = epoll_wait(self->epoll_fd, events, EVENTS, -1);
        if (n < 0 && errno != EINTR) {
            break;
        }
        pthread_mutex_lock(&self->lock);
        for (int i = 0; i < n && !self->closing; i++) {
            if (events[i].data.u64 == STOP_KEY) {
                continue;
            }
            while (self->total >= self->total_cap && !self->closing) {
                pthread_cond_wait(&self->room, &self->lock);
            }
            if (!self->closing) {
                read_one(self, events[i].data.u64, buffer);
            }
        }
        if (self->closing) {
            pthread_mutex_unlock(&self->lock);
            break;
        }
        int wake = self->chunk_count > 0 && !self->woken;
        if (wake) {
            self->woken = 1;
        }
        pthread_mutex_unlock(&self->lock);
        if (wake) {
            ssize_t w;
            do {
                w = write(self->wake_fd, "r", 1); /* a full pipe already wakes the loop */
            } while (w < 0 && errno == EINTR);
        }
    }
    PyMem_RawFree(buffer);
    return NULL;
}

static int Reader_init(Reader *self, PyObject *args, PyObject *kwds) {
    int wake_fd;
    Py_ssize_t connection_cap, total_cap;
    if (self->started) {
        PyErr_SetString(PyExc_RuntimeError, "Reader already started");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "inn:Reader", &wake_fd, &connection_cap, &total_cap)) {
        return -1;
    }
    if (connection_cap <= 0 || total_cap <= 0) {
        PyErr_SetString(PyExc_ValueError, "the caps must be positive");
        return -1;
    }
    self->wake_fd = wake_fd;
    self->connection_cap = connection_cap;
    self->total_cap = total_cap;
    self->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (self->epoll_fd < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    self->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data = {.u64 = STOP_KEY}};
    if (self->stop_fd < 0 || epoll_ctl(self->epoll_fd, EPOLL_CTL_ADD, self->stop_fd, &ev) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        if (self->stop_fd >= 0) {
            close(self->stop_fd);
        }
        close(self->epoll_fd);
        return -1;
    }
    if (pthread_mutex_init(&self->lock, NULL) != 0 || pthread_cond_init(&self->room, NULL) != 0
            || pthread_cond_init(&self->idle, NULL) != 0) {
        close(self->stop_fd);
        close(self->epoll_fd);
        PyErr_SetString(PyExc_OSError, "cannot make the reader's lock");
        return -1;
    }
    int failed = pthread_create(&self->thread, NULL, reader_main, self);
    if (failed) {
        pthread_mutex_destroy(&self->lock);
        pthread_cond_destroy(&self->room);
        pthread_cond_destroy(&self->idle);
        close(self->stop_fd);
        close(self->epoll_fd);
        errno = failed;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    self->started = 1;
    return 0;
}

static PyObject *Reader_watch(Reader *self, PyObject *arg) {
    long fd = PyLong_AsLong(arg);
    if (fd == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (fd < 0 || fd > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "not a descriptor");
        return NULL;
    }
    if (!self->started || self->joined) {
        PyErr_SetString(PyExc_RuntimeError, "the reader is closed");
        return NULL;
    }
    pthread_mutex_lock(&self->lock);
    Py_ssize_t index;
    if (self->free_count > 0) {
        index = self->free_slots[--self->free_count];
    } else {
        if (self->slot_count == self->slot_capacity) {
            Py_ssize_t capacity = self->slot_capacity ? 2 * self->slot_capacity : 64;
            Slot *slots = PyMem_RawRealloc(self->slots, (size_t)capacity * sizeof(Slot));
            if (slots != NULL) {
                self->slots = slots;
            }
            Py_ssize_t *free_slots = slots == NULL ? NULL
                : PyMem_RawRealloc(self->free_slots, (size_t)capacity * sizeof(Py_ssize_t));
            if (free_slots == NULL) {
                pthread_mutex_unlock(&self->lock);
                return PyErr_NoMemory();
            }
            self->free_slots = free_slots;
            self->slot_capacity = capacity;
        }
        index = self->slot_count++;
        self->slots[index].generation = 0;
    }
    Slot *slot = &self->slots[index];
    uint32_t generation = slot->generation;
    *slot = (Slot){.fd = (int)fd, .generation = generation};
    uint64_t token = token_of(index, generation);
    if (set_reading(self, slot, token) < 0) { /* ENOMEM, ENOSPC (max_user_watches): the loop reads it itself */
        slot_free(self, slot);
        pthread_mutex_unlock(&self->lock);
        Py_RETURN_NONE;
    }
    pthread_mutex_unlock(&self->lock);
    return PyLong_FromUnsignedLongLong(token);
}

static int token_arg(PyObject *arg, uint64_t *token) {
    *token = PyLong_AsUnsignedLongLong(arg);
    return *token == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *Reader_unwatch(Reader *self, PyObject *arg) {
    uint64_t token;
    if (token_arg(arg, &token) < 0) {
        return NULL;
    }
    if (self->joined) {
        Py_RETURN_NONE; /* the thread is gone: nothing reads it */
    }
    pthread_mutex_lock(&self->lock);
    Slot *slot = slot_of(self, token);
    if (slot != NULL) {
        while (slot->busy) { /* a read under way: microseconds, it never blocks */
            pthread_cond_wait(&self->idle, &self->lock);
            slot = slot_of(self, token); /* the array may have grown meanwhile */
        }
        slot_free(self, slot);
    }
    pthread_mutex_unlock(&self->lock);
    Py_RETURN_NONE;
}

static PyObject *set_paused(Reader *self, PyObject *arg, int paused) {
    uint64_t token;
    if (token_arg(arg, &token) < 0) {
        return NULL;
    }
    if (self->joined) {
        Py_RETURN_NONE;
    }
    pthread_mutex_lock(&self->lock);
    Slot *slot = slot_of(self, token);
    int failed = 0;
    if (slot != NULL) {
        slot->paused = paused;
        failed = set_reading(self, slot, token);
    }
    pthread_mutex_unlock(&self->lock);
    if (failed) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

static PyObject *Reader_pause(Reader *self, PyObject *arg) {
    return set_paused(self, arg, 1);
}

static PyObject *Reader_resume(Reader *self, PyObject *arg) {
    return set_paused(self, arg, 0);
}

static PyObject *Reader_take(Reader *self, PyObject *unused) {
    pthread_mutex_lock(&self->lock);
    Chunk *chunks = self->chunks;
    Py_ssize_t count = self->chunk_count, capacity = self->chunk_capacity;
    self->chunks = NULL;
    self->chunk_count = self->chunk_capacity = 0;
    self->woken = 0;
    pthread_mutex_unlock(&self->lock);
    PyObject *result = PyList_New(count);
    for (Py_ssize_t i = 0; result != NULL && i < count; i++) {
        PyObject *token = PyLong_FromUnsignedLongLong(chunks[i].token);
        PyObject *value = chunks[i].data != NULL ? PyBytes_FromStringAndSize(chunks[i].data, chunks[i].size)
                                                 : PyLong_FromSsize_t(chunks[i].size);
        PyObject *pair = token != NULL && value != NULL ? PyTuple_Pack(2, token, value) : NULL;
        Py_XDECREF(token);
        Py_XDECREF(value);
        if (pair == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, pair);
    }
    pthread_mutex_lock(&self->lock);
    if (result == NULL) { /* no memory: kept, ahead of what was read meanwhile, for the next take() */
        Py_ssize_t total = count + self->chunk_count;
        Chunk *merged = total <= capacity ? chunks : PyMem_RawRealloc(chunks, (size_t)total * sizeof(Chunk));
        if (merged != NULL) {
            if (self->chunk_count) {
                memcpy(merged + count, self->chunks, (size_t)self->chunk_count * sizeof(Chunk));
            }
            PyMem_RawFree(self->chunks);
            self->chunks = merged;
            self->chunk_count = total;
            self->chunk_capacity = total > capacity ? total : capacity;
            pthread_mutex_unlock(&self->lock);
            return NULL;
        }
        /* not even room to keep them: they are dropped, and the caller ends every connection (OSError) */
    }
    int was_full = self->total >= self->total_cap;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (chunks[i].size <= 0 || chunks[i].data == NULL) {
            continue;
        }
        self->total -= chunks[i].size + CHUNK_COST;
        Slot *slot = slot_of(self, chunks[i].token);
        if (slot != NULL) {
            slot->outstanding -= chunks[i].size + CHUNK_COST;
            if (slot->capped && slot->outstanding < self->connection_cap) {
                slot->capped = 0;
                set_reading(self, slot, chunks[i].token);
            }
        }
    }
    if (was_full && self->total < self->total_cap) {
        pthread_cond_signal(&self->room);
    }
    pthread_mutex_unlock(&self->lock);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyMem_RawFree(chunks[i].data);
    }
    PyMem_RawFree(chunks);
    if (result == NULL) {
        PyErr_Clear();
        errno = ENOMEM;
        return PyErr_SetFromErrno(PyExc_OSError); /* not MemoryError: these bytes are gone */
    }
    return result;
}

static void reader_join(Reader *self) {
    if (!self->started || self->joined) {
        return;
    }
    pthread_mutex_lock(&self->lock);
    self->closing = 1;
    pthread_cond_signal(&self->room);
    pthread_mutex_unlock(&self->lock);
    uint64_t one = 1;
    ssize_t w;
    do {
        w = write(self->stop_fd, &one, sizeof one);
    } while (w < 0 && errno == EINTR);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(self->thread, NULL);
    Py_END_ALLOW_THREADS
    self->joined = 1;
    close(self->stop_fd);
    close(self->epoll_fd);
}

static PyObject *Reader_close(Reader *self, PyObject *unused) {
    reader_join(self);
    Py_RETURN_NONE;
}

static void Reader_dealloc(Reader *self) {
    if (self->started) {
        reader_join(self);
        pthread_mutex_destroy(&self->lock);
        pthread_cond_destroy(&self->room);
        pthread_cond_destroy(&self->idle);
    }
    for (Py_ssize_t i = 0; i < self->chunk_count; i++) {
        PyMem_RawFree(self->chunks[i].data);
    }
    PyMem_RawFree(self->chunks);
    PyMem_RawFree(self->slots);
    PyMem_RawFree(self->free_slots);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef reader_methods[] = {
    {"watch", (PyCFunction)Reader_watch, METH_O,
     "watch(fd) -> token or None: read fd from now on; None if the epoll set refused it"},
    {"unwatch", (PyCFunction)Reader_unwatch, METH_O, "unwatch(token): read it no more (a read under way is waited for)"},
    {"pause", (PyCFunction)Reader_pause, METH_O, "pause(token): read it no more until resume(token)"},
    {"resume", (PyCFunction)Reader_resume, METH_O, "resume(token): read it again"},
    {"take", (PyCFunction)Reader_take, METH_NOARGS,
     "take() -> [(token, bytes | 0 | -errno)]: what the thread read since the last take()"},
    {"close", (PyCFunction)Reader_close, METH_NOARGS, "close(): end the thread"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rebalance_lab.coordinator._receive_many.Reader",
    .tp_doc = "Reader(wake_fd, connection_cap, total_cap): one thread that reads sockets without the GIL "
              "(coordinator/receiver.py)",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = reader_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_receive_many", "A thread that reads requests without the GIL (coordinator/receiver.py).",
    -1, NULL,
};

PyMODINIT_FUNC PyInit__receive_many(void) {
    if (PyType_Ready(&ReaderType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(&ReaderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
