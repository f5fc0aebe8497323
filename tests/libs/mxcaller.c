/* A Python extension that calls libmxalias through its PLT, as a Cython binding calls
 * librados (tests/libs/test_aliases.py): import mxcaller; mxcaller.call("mx_create", 1). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

int mx_create(int);
int mx_alias(int);
int mx_gi(int);
int mx_gi_user(int);
int mx_static_user(int);
int mx_wrapper(int);

static PyObject *call(PyObject *self, PyObject *args) {
    const char *name;
    int x, result = -1;
    if (!PyArg_ParseTuple(args, "si", &name, &x))
        return NULL;
    if (strcmp(name, "mx_create") == 0)
        result = mx_create(x); /* @call_create */
    else if (strcmp(name, "mx_alias") == 0)
        result = mx_alias(x);
    else if (strcmp(name, "mx_gi") == 0)
        result = mx_gi(x);
    else if (strcmp(name, "mx_gi_user") == 0)
        result = mx_gi_user(x);
    else if (strcmp(name, "mx_static_user") == 0)
        result = mx_static_user(x);
    else if (strcmp(name, "mx_wrapper") == 0)
        result = mx_wrapper(x);
    else
        return PyErr_Format(PyExc_ValueError, "no function %s", name);
    return PyLong_FromLong(result);
}

static PyMethodDef methods[] = {{"call", call, METH_VARARGS, "call a libmxalias function"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mxcaller", NULL, -1, methods};

PyMODINIT_FUNC PyInit_mxcaller(void) { return PyModule_Create(&module); }
