/* A tiny C extension the tests compile with -g -O0: known functions, known lines
 * (found through the marker comments, never by number), a crash on demand. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

volatile long mixdbg_sink = 0;

long native_step(long i)
{
    long doubled = i * 2; /* @step */
    mixdbg_sink += doubled;
    return doubled;
}

static PyObject *native_loop(PyObject *self, PyObject *args)
{
    long n, total = 0; /* @entry */
    if (!PyArg_ParseTuple(args, "l", &n))
        return NULL;
    for (long i = 0; i < n; i++) {
        total += native_step(i); /* @loop */
    }
    return PyLong_FromLong(total);
}

static PyObject *native_callback(PyObject *self, PyObject *args)
{
    PyObject *func;
    if (!PyArg_ParseTuple(args, "O", &func))
        return NULL;
    return PyObject_CallNoArgs(func); /* @callback */
}

void native_crash_here(int how)
{
    if (how == 0) {
        volatile int *nowhere = NULL;
        *nowhere = 42; /* @segv */
    } else if (how == 1) {
        abort(); /* @abort */
    } else {
        raise(SIGFPE); /* @fpe */
    }
}

static PyObject *native_crash(PyObject *self, PyObject *args)
{
    int how = 0;
    if (!PyArg_ParseTuple(args, "|i", &how))
        return NULL;
    native_crash_here(how);
    Py_RETURN_NONE;
}

static PyObject *native_spin(PyObject *self, PyObject *args)
{
    double seconds;
    if (!PyArg_ParseTuple(args, "d", &seconds))
        return NULL;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long spins = 0;
    do {
        spins += 1 + (native_step(spins) & 1); /* @spin */
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    return PyLong_FromLong(spins);
}

static PyObject *native_block(PyObject *self, PyObject *args)
{
    double seconds;
    if (!PyArg_ParseTuple(args, "d", &seconds))
        return NULL;
    struct timespec pause = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    Py_BEGIN_ALLOW_THREADS
    nanosleep(&pause, NULL); /* @block */
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* A struct local and a call that never returns by itself: a debugger sets a member (the
 * sum is computed after the stop) and cancels a call gdb makes (mixdbg_release ends it). */
struct mixdbg_point {
    long x;
    long y;
};

volatile long mixdbg_release = 0;

long native_wait_for_release(void)
{
    while (!mixdbg_release) {
    }
    return mixdbg_release;
}

static PyObject *native_point_sum(PyObject *self, PyObject *args)
{
    long x;
    if (!PyArg_ParseTuple(args, "l", &x))
        return NULL;
    struct mixdbg_point point = {x, x + 1};
    long sum = point.x + point.y; /* @point */
    return PyLong_FromLong(sum);
}

static PyMethodDef methods[] = {
    {"loop", native_loop, METH_VARARGS, "Call native_step(i) for i in range(n)."},
    {"callback", native_callback, METH_VARARGS, "Call a Python callable from C."},
    {"crash", native_crash, METH_VARARGS, "0: SIGSEGV, 1: SIGABRT, 2: SIGFPE."},
    {"spin", native_spin, METH_VARARGS, "Busy-loop in C for the given seconds."},
    {"block", native_block, METH_VARARGS, "Sleep in C for the given seconds, without the GIL."},
    {"point_sum", native_point_sum, METH_VARARGS, "x + (x + 1), through a struct local."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mixdbg_testext", NULL, -1, methods};

PyMODINIT_FUNC PyInit_mixdbg_testext(void)
{
    return PyModule_Create(&module);
}
