/* cxxnames: C++ names, for the demangling test. CPU time goes, in about equal halves, to a
 * member function of a class in a namespace and to a function template instantiated for
 * double, whose mangled names a profile must not show:
 *
 *   main -> geo::Field::energy(int) const
 *   main -> double geo::detail::integrate<double>(geo::Vec<double> const&, unsigned long)
 *
 * and main itself takes one page fault at every run, on a page of its own it writes first (the
 * views rooted at main over page faults need one: test-fleet.py; the faults main took before,
 * on the vdso's page, came or not by chance).
 *
 * Usage: cxxnames [MS], by default 400 ms of CPU time in all. */
#include "workload.h"

namespace geo {

template <typename T> struct Vec {
        T x, y;
};

namespace detail {

template <typename T> WORKLOAD_FUNCTION T integrate(const Vec<T> &v, unsigned long ms) {
        spin_cpu_ms(ms);
        call_barrier();
        return v.x + v.y;
}

}  // namespace detail

class Field {
public:
        explicit Field(unsigned long ms) : ms_(ms) {}
        WORKLOAD_FUNCTION double energy(int rounds) const;

private:
        unsigned long ms_;
};

double Field::energy(int rounds) const {
        spin_cpu_ms(ms_);
        call_barrier();
        return rounds * 0.5;
}

}  // namespace geo

alignas(4096) static volatile char own_page[4096];

int main(int argc, char **argv) {
        unsigned long ms;

        workload_arg(argc, argv, 1, 400, &ms);
        own_page[0] = 1;
        geo::Field field(ms / 2);
        geo::Vec<double> v = { 1.0, 2.0 };
        double e = field.energy(3);

        call_barrier();
        e += geo::detail::integrate(v, ms / 2);
        call_barrier();
        return e > 0 ? 0 : 1;
}
