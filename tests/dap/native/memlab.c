/* The memory, watchpoint and instruction tests' C extension (compiled -g -O0 by the
 * tests): a buffer filled with known bytes, a checksum of it the program prints, a global
 * changed on a known line (in a loop, and in a fork child), a thread ticking while another
 * sleeps (single-thread steps). Lines are found through the
 * marker comments, never by number. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <unistd.h>

long memlab_counter = 0;
long memlab_last = -1;
unsigned char memlab_block[65536]; /* a memory view's page (benchmarks) */
volatile long memlab_ticks = 0;

static long checksum(const unsigned char *data, long size)
{
    long sum = 0; /* @checksum */
    for (long i = 0; i < size; i++)
        sum = sum * 31 + data[i];
    return sum;
}

static PyObject *fill(PyObject *self, PyObject *args)
{
    unsigned char buffer[16];
    unsigned char *bytes = buffer;
    for (int i = 0; i < 16; i++)
        buffer[i] = (unsigned char)(i * 7 + 1);
    long sum = checksum(bytes, 16); /* @filled */
    return PyLong_FromLong(sum);
}

static PyObject *bump(PyObject *self, PyObject *args)
{
    long times, step = 1; /* @bump_start */
    if (!PyArg_ParseTuple(args, "l", &times))
        return NULL;
    for (long i = 0; i < times; i++) {
        memlab_counter += step; /* @bump */
        memlab_last = i; /* @after_bump */
    }
    return PyLong_FromLong(memlab_counter); /* @bump_end */
}

static void *tick(void *unused)
{
    for (;;) {
        memlab_ticks++;
        usleep(1000);
    }
    return unused;
}

static PyObject *ticking(PyObject *self, PyObject *args)
{
    pthread_t thread;
    pthread_create(&thread, NULL, tick, NULL);
    pthread_detach(thread);
    usleep(20000); /* @ticking */
    usleep(200000); /* @ticked */
    usleep(200000); /* @ticked_twice */
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fill", fill, METH_NOARGS, "Fill a buffer with 16 known bytes; their checksum."},
    {"bump", bump, METH_VARARGS, "Add 1 to memlab_counter N times; its value."},
    {"ticking", ticking, METH_NOARGS, "Start a thread adding 1 to memlab_ticks every ms; sleep 0.42 s."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "memlab", NULL, -1, methods};

PyMODINIT_FUNC PyInit_memlab(void)
{
    return PyModule_Create(&module);
}
