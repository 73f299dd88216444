/* Demangling: pairs worked by hand from the Itanium C++ ABI's mangling rules and Rust's legacy
 * and v0 schemes (rustc's RFC 2603), in the forms perf prints. */
#include <string.h>

#include "demangle.h"
#include "tap.h"

static void is(const char *mangled, const char *want, const char *what) {
        char buf[1024];
        size_t n = demangle(mangled, buf, sizeof buf);

        ok(n > 0 && strcmp(buf, want) == 0 && n == strlen(want), "%s: %s", what, want);
}

static void unchanged(const char *name, const char *what) {
        char buf[1024];

        ok(demangle(name, buf, sizeof buf) == 0, "%s: '%s' left as it is", what, name);
}

static void test_cpp(void) {
        /* N...E: nested name 2at 6native 6matmul; R K N S_ 6Tensor E: const& at::Tensor, S_ being
         * the first substitution (at); S3_ the fourth (at::Tensor const&). */
        is("_ZN2at6native6matmulERKNS_6TensorES3_",
           "at::native::matmul(at::Tensor const&, at::Tensor const&)", "the issue's PyTorch name");
        is("_Z3fooi", "foo(int)", "a free function");
        is("_ZN2ns3BarC2Ev", "ns::Bar::Bar()", "a constructor");
        is("_ZN2ns3BarD1Ev", "ns::Bar::~Bar()", "a destructor");
        is("_ZNSt6vectorIiSaIiEE9push_backERKi",
           "std::vector<int, std::allocator<int> >::push_back(int const&)",
           "a member of a class template, with St and Sa");
        is("_Z3maxIdET_S0_S0_", "double max<double>(double, double)",
           "a function template: T_ is its argument");
        is("_ZplRK1AS1_", "operator+(A const&, A const&)", "an operator");
        is("_ZN1AixEm", "A::operator[](unsigned long)", "a member operator");
        is("_ZN1AcvbEv", "A::operator bool()", "a conversion operator");
        is("_ZZ4mainE5count", "main::count", "a local static");
        is("_ZN12_GLOBAL__N_14workEv", "(anonymous namespace)::work()", "an anonymous namespace");
        is("_Z3fooi.cold", "foo(int) [clone .cold]", "gcc's cold clone");
        is("_ZTV1A", "vtable for A", "a vtable");
        is("_ZNSt8ios_baseD2Ev@plt", "std::ios_base::~ios_base()@plt",
           "a PLT stub (plt.c), as perf names it");
        unchanged("_Z@plt", "a PLT stub of no mangled name");
        unchanged("qsort@plt", "a PLT stub of a C function");
}

static void test_rust(void) {
        /* Legacy: a C++-like nested name whose last component is h + 16 hex digits, the hash
         * perf leaves out. */
        is("_ZN3std2rt10lang_start17h0123456789abcdefE", "std::rt::lang_start", "legacy Rust, hash left out");
        is("_ZN4core3fmt9Formatter3pad17h1f1e2d3c4b5a6978E", "core::fmt::Formatter::pad",
           "legacy Rust method");
        is("_ZN5alloc3vec12Vec$LT$T$GT$4push17h0011223344556677E", "alloc::vec::Vec<T>::push",
           "legacy Rust escapes: $LT$ and $GT$");
        /* v0: N v (value namespace) C s<disambiguator>_ <len>crate <len>name. */
        is("_RNvCs1234_7mycrate3foo", "mycrate::foo", "v0 Rust function");
        is("_RNvNtCs9ltgdHTiPiY_4core3ptr13drop_in_place", "core::ptr::drop_in_place",
           "v0 Rust, a module path");
        is("_RNvMNtCs1234_7mycrate5shapeNtB2_6Circle4area", "<mycrate::shape::Circle>::area",
           "v0 Rust inherent method, B2_ a back reference");
        is("_RINvCs1234_7mycrate4swaplEB2_", "mycrate::swap::<i32>", "v0 Rust generic instance");
}

static void test_not_mangled(void) {
        char buf[8], big[DEMANGLE_NAME_MAX + 8];

        unchanged("main", "a C name");
        unchanged("_start", "an underscore name");
        unchanged("_Z", "a bare prefix");
        unchanged("_Zfoo", "not a valid mangling");
        unchanged("libc.so.6+0x1234", "an unsymbolized frame");
        unchanged("syscall:read", "a system call");
        ok(demangle("_ZN2at6native6matmulERKNS_6TensorES3_", buf, sizeof buf) == 0,
           "a readable form longer than the buffer: 0, not a cut name");
        memset(big, 'a', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        memcpy(big, "_ZN4", 4);
        ok(demangle(big, buf, sizeof buf) == 0, "a name past DEMANGLE_NAME_MAX is not demangled");
}

/* Names the fuzzer found that kept libiberty busy for 30 s and more (tests/fuzz/corpus/demangle):
 * each must come back at once (a test that hangs fails by meson's timeout). */
static void test_hostile(void) {
        char buf[4096];

        unchanged("_RINvCs1234_7FFFFFlE2BFFGaplEB2_", "a binder of billions of lifetimes, printed");
        unchanged("_RNMC7mRNeNvC4C_ERINvC4FFlE0FG7mRNeNvC4C_ERINvC4Fa_",
                  "a binder of thousands of lifetimes, in the unprinted instantiating crate");
        ok(demangle("_RYYYYYNpYYNtCs1_7mycrat3u5shapeB_", buf, sizeof buf) == 0,
           "a backreference that repeats itself past the buffer: 0");
        is("_RNvNtCs1234_7mycrate4Grid3new", "mycrate::Grid::new", "a v0 name with a G in an identifier");
        is("_RNvNvNtNtNtNtCsll8UG4dV9RX_3std3sys4args4unix3imp15ARGV_INIT_ARRAY12init_wrapper",
           "std::sys::args::unix::imp::ARGV_INIT_ARRAY::init_wrapper",
           "a v0 name whose crate disambiguator holds a G and digits before _ (std's, in Chromium)");
}

int main(void) {
        test_cpp();
        test_rust();
        test_not_mangled();
        test_hostile();
        return tap_done();
}
