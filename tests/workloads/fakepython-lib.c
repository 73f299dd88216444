/* A library named libpython3.11.so that is no Python: it defines neither _PyRuntime nor
 * Py_Version (fakepython.c, mode named). */
int fakepython_lib_nothing(void);
int fakepython_lib_nothing(void) {
        return 0;
}
