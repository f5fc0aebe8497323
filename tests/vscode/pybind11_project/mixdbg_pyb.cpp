// A pybind11 module for the VS Code tests, built with -g -O0 by the test. The test finds lines by
// their marker comments (// @name), never by number.
#include <pybind11/pybind11.h>

int add_twice(int a, int b) {
    int total = a + b;  // @first
    total = total * 2;  // @second
    return total;
}

int call_add(int a, int b) {
    int twice = add_twice(a, b);  // @call
    return twice + 1;
}

PYBIND11_MODULE(mixdbg_pyb, m) {
    m.def("call_add", &call_add, "add_twice(a, b) + 1");
}
