/* Fuzz target: a perf.data file, through the header, attrs and feature parsers and every record
 * of its data section (event lookup, time, sample decoding). */
#include "fuzz.h"
#include "perf-data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct perf_data *d = NULL;
        const struct perf_event_header *h;
        uint64_t offset = 0;
        uint8_t *copy;
        int r;

        /* A mapped file is page-aligned: so is (at least to 16) a malloc()ed copy. */
        copy = malloc(size ? size : 1);
        if (!copy)
                return 0;
        memcpy(copy, data, size);
        if (perf_data_open_buffer(copy, size, &d) == 0) {
                while ((r = perf_data_next(d, &offset, &h)) > 0) {
                        const struct perf_data_event *e = perf_data_sample_event(d, h), *le;
                        struct perf_data_sample s;
                        uint64_t lost;

                        (void) perf_data_record_time(d, h);
                        if (perf_data_parse_lost(d, h, &le, &lost) > 0 && le &&
                            (le < d->events || le >= d->events + d->n_events))
                                abort();
                        if (h->size > d->data_size)
                                abort();
                        if (e && perf_data_parse_sample(e, h, &s) == 0 &&
                            (s.nr * 8 > h->size || s.stack_size > h->size || s.dyn_size > s.stack_size))
                                abort();
                }
                perf_data_free(d);
        }
        free(copy);
        return 0;
}
