/* The memory, watchpoint and instruction tests' C extension (compiled -g -O0 by the
 * tests): a buffer filled with known bytes, a checksum of it the program prints, a global
 * changed on a known line (in a loop, and in a fork child). Lines are found through the
 * marker comments, never by number. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

long memlab_counter = 0;
long memlab_last = -1;
unsigned char memlab_block[65536]; /* a memory view's page (benchmarks) */

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

static PyMethodDef methods[] = {
    {"fill", fill, METH_NOARGS, "Fill a buffer with 16 known bytes; their checksum."},
    {"bump", bump, METH_VARARGS, "Add 1 to memlab_counter N times; its value."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "memlab", NULL, -1, methods};

PyMODINIT_FUNC PyInit_memlab(void)
{
    return PyModule_Create(&module);
}
