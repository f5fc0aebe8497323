// The extern "C" wrapper: a C API over a C++ function (tests/libs/test_aliases.py).
namespace mx {
__attribute__((noinline)) int work(int x) {
    int result = x * 10; /* @work */
    return result;
}
}  // namespace mx

extern "C" int mx_wrapper(int x) {
    int result = mx::work(x) + 1; /* @wrapper */
    return result;
}
