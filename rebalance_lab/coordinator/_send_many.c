/* Send a burst of answers, each on its own socket, without holding the GIL (issue 22; coordinator/sender.py).
 *
 * send_and_close(fds, answers) -> list of int
 *
 * fds: file descriptors the caller gave up (dups of connections' sockets); answers: bytes, one per fd. Each answer
 * is sent once with MSG_DONTWAIT | MSG_NOSIGNAL (never blocks, never raises SIGPIPE), then its fd is closed. The
 * result holds, per answer, the bytes sent (possibly fewer than its length) or -errno. Everything is checked before
 * the first send: on a TypeError or ValueError nothing is sent and no fd is closed.
 *
 * The sends run with the GIL released, so the interpreter's other thread (the event loop) runs Python meanwhile:
 * a loopback send does the receiver's TCP work too, ~10 us per answer, which Kafka's network threads do beside its
 * request handlers. Built by `python -m rebalance_lab.compiled build` (rebalance_lab/compiled.py: NATIVE).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

static PyObject *send_and_close(PyObject *self, PyObject *args) {
    PyObject *fds, *answers;
    if (!PyArg_ParseTuple(args, "O!O!:send_and_close", &PyList_Type, &fds, &PyList_Type, &answers)) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(fds);
    if (PyList_GET_SIZE(answers) != n) {
        PyErr_SetString(PyExc_ValueError, "send_and_close: as many answers as fds");
        return NULL;
    }
    Py_ssize_t slots = n > 0 ? n : 1;
    int *fd = PyMem_New(int, slots);
    const char **data = PyMem_New(const char *, slots);
    Py_ssize_t *size = PyMem_New(Py_ssize_t, slots);
    Py_ssize_t *sent = PyMem_New(Py_ssize_t, slots);
    PyObject *owned = PyList_GetSlice(answers, 0, n); /* the answers stay alive while the GIL is released */
    PyObject *result = NULL;
    if (fd == NULL || data == NULL || size == NULL || sent == NULL || owned == NULL) {
        if (owned != NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long value = PyLong_AsLong(PyList_GET_ITEM(fds, i));
        if (value == -1 && PyErr_Occurred()) {
            goto done;
        }
        if (value < 0 || value > INT_MAX) {
            PyErr_Format(PyExc_ValueError, "send_and_close: fd %ld out of range", value);
            goto done;
        }
        PyObject *answer = PyList_GET_ITEM(owned, i);
        if (!PyBytes_Check(answer)) {
            PyErr_Format(PyExc_TypeError, "send_and_close: answers must be bytes, not %.100s", Py_TYPE(answer)->tp_name);
            goto done;
        }
        fd[i] = (int)value;
        data[i] = PyBytes_AS_STRING(answer);
        size[i] = PyBytes_GET_SIZE(answer);
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        ssize_t r;
        do {
            r = send(fd[i], data[i], (size_t)size[i], MSG_DONTWAIT | MSG_NOSIGNAL);
        } while (r < 0 && errno == EINTR);
        sent[i] = r < 0 ? -(Py_ssize_t)errno : (Py_ssize_t)r;
        close(fd[i]);
    }
    Py_END_ALLOW_THREADS
    result = PyList_New(n);
    if (result == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *count = PyLong_FromSsize_t(sent[i]);
        if (count == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, count);
    }
done:
    Py_XDECREF(owned);
    PyMem_Free(fd);
    PyMem_Free(data);
    PyMem_Free(size);
    PyMem_Free(sent);
    return result;
}

static PyMethodDef methods[] = {
    {"send_and_close", send_and_close, METH_VARARGS,
     "send_and_close(fds, answers): send each answer once on its fd without the GIL, close the fd; bytes sent or "
     "-errno each"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_send_many", "Sends a burst of answers without the GIL (coordinator/sender.py).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__send_many(void) { return PyModule_Create(&module); }
