/* A small C library whose exported names are aliases of the real functions, as shipped
 * libraries have them (tests/libs/test_aliases.py). Each kind of alias, as its own export:
 *   mx_create     a versioned export of _mx_create (librados: rados_create2 -> _rados_create2)
 *   mx_alias      __attribute__((alias)) of _mx_real
 *   mx_gi         called inside the library through its hidden __GI_mx_gi alias (glibc's way)
 * (mx_wrapper, an extern "C" wrapper of a C++ function, is in mxwrap.cpp.) */

/* The versioned export: the default version MX_2 and an old one, MX_1. */
int _mx_create_v1(int x) {
    return x + 100; /* @create_v1 */
}

int _mx_create(int x) {
    int result = x + 1; /* @create */
    return result;
}
__asm__(".symver _mx_create_v1, mx_create@MX_1");
__asm__(".symver _mx_create, mx_create@@MX_2");

/* The alias attribute. */
int _mx_real(int x) {
    int result = x * 3; /* @real */
    return result;
}
int mx_alias(int x) __attribute__((alias("_mx_real")));

/* glibc's internal aliases: calls inside the library go to the hidden __GI_ name. */
__attribute__((noinline)) int mx_gi(int x) {
    int result = x - 1; /* @gi */
    return result;
}
extern __typeof(mx_gi) __GI_mx_gi __attribute__((alias("mx_gi"), visibility("hidden")));

int mx_gi_user(int x) {
    return __GI_mx_gi(x) * 2; /* @gi_user */
}

/* A static function: its name is in the symbol table of the debug file only. */
__attribute__((noinline)) static int mx_helper(int x) {
    return x + 7; /* @helper */
}

int mx_static_user(int x) {
    return mx_helper(x); /* @static_user */
}
