/* process_db: the example program of Hall & Goldberg (1993), §3, whose page faults and time are
 * dominated by the qsort that uniquify_db calls, not by the other qsort, in print_salary_list.
 *
 *   main
 *     read_db                      N records written to a memfd, mapped but not touched
 *       make_record, write_all -> write
 *     uniquify_db
 *       build_db_ptrs              an array of pointers to the records
 *       qsort -> name_field_lt     sorts the pointers by name: touches every record's page
 *       merge_adjacent_records     drops each record equal to the one before
 *     print_salary_list
 *       extract_salary_fields      copies the salaries into a fresh array of ints
 *       qsort -> integer_lt        sorts that array, which is already in memory
 *     print_salary_stats
 *       stat_summary               minimum, median, mean and maximum
 *
 * The paper's program text has print_salary_stats do everything after uniquify_db, but its
 * profiles show (main print_salary_list extract_salary_fields); we keep both functions, with
 * print_salary_stats holding only the summary. The "print" functions fold what they would
 * print into globals instead, so that the program is silent and its work cannot be dropped.
 * glibc's qsort() is a tail call to qsort_r(), which sorts in msort_with_tmp(), so profiles
 * show (uniquify_db qsort_r msort_with_tmp ... name_field_lt). glibc has no frame pointers:
 * from name_field_lt, a walk of frame pointers alone gets no further than msort_with_tmp.
 *
 * The paper's faults came from a database larger than memory; ours are minor faults on a
 * database that is in memory but not yet mapped. read_db writes the records to a memfd with
 * write(2), which fills the page cache without faulting in this process, and maps it read-only
 * without touching it, so the first touch of each page of records, and its fault, is a load in
 * name_field_lt called from qsort. A memfd (shmem) rather than a file in /tmp, because on a
 * disk file system the page cache may hold large folios, and one fault can map a whole folio.
 * On shmem each fault maps the 16 pages around it that are cached ("fault-around", 64 KiB):
 * one fault per 64 records of RECORD_SIZE. The malloc'ed arrays fault once per 4 KiB: the
 * pointers and qsort's merge buffer for them 8 bytes a record each, the salaries and their
 * buffer 4 each. So 1 KiB records give uniquify_db's qsort about (16 + 2) / (16 + 6), 80%, of
 * the faults; 256-byte records would give it 6 / 10. Unlike the paper's, the second qsort has
 * a share too, the faults of its merge buffer, as large as that of extract_salary_fields.
 *
 * The time goes to the same place because comparing two names costs far more than comparing two
 * salaries: name_field_lt orders names as a telephone directory does, and sorted names share
 * long prefixes. It compares by hand rather than calling strcmp() so that the faulting loads,
 * and the sort's time, are in its own frame. Every DUPLICATE_EVERY-th record repeats the one
 * before, for merge_adjacent_records to drop. The records come from a fixed seed, so every run
 * sorts the same data. Usage: process_db [N_RECORDS], by default 128000 records (125 MiB). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workload.h"

#define N_RECORDS_DEFAULT 128000
#define RECORD_SIZE 1024   /* bytes, see above */
#define NAME_SIZE 64       /* bytes, with the terminating NUL */
#define DUPLICATE_EVERY 16 /* records */
#define WRITE_BATCH 64     /* records per write(2) */

struct record {
        char name[NAME_SIZE]; /* "Surname, Given-name M. NNNNNN", NUL-padded */
        int salary;           /* dollars a year */
        char other_fields[RECORD_SIZE - NAME_SIZE - sizeof(int)];
};
_Static_assert(sizeof(struct record) == RECORD_SIZE, "a record is RECORD_SIZE bytes");

struct db {
        const struct record *records; /* mapped read-only from the memfd */
        size_t n_records;
};

struct salary_stats {
        int min, median, max; /* dollars a year */
        long long mean;       /* dollars a year */
};

/* What the "print" functions would print, kept so that their work is not optimized away. */
uint64_t printed;
struct salary_stats printed_stats;

static const char *const surnames[] = {
        "Fernandez-Garcia", "Goldberg",   "Hall",       "Johansson",
        "Kowalski-Nowak",   "Mc Donald",  "McDonald",   "Nakamura",
        "O'Brien",          "OBrien",     "Rasmussen",  "Schneider-Weiss",
        "van der Berg",     "Vanderberg", "Williamson", "Williams-Thompson",
};
static const char *const given_names[] = {
        "Alexander", "Benjamin",  "Catherine", "Christopher", "Elizabeth", "Frederick",
        "Gabriella", "Jonathan",  "Katherine", "Margaret",    "Nathaniel", "Penelope",
        "Robert",    "Sebastian", "Victoria",  "William",
};

/* xorshift64*: a fixed sequence, so that every run builds the same database. */
static inline uint64_t random_next(uint64_t *state) {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        return *state * 0x2545f4914f6cdd1dULL;
}

/* Fills rec from the random number r; records made from the same r are duplicates. */
WORKLOAD_FUNCTION static void make_record(struct record *rec, uint64_t r) {
        memset(rec->name, 0, sizeof rec->name);
        snprintf(rec->name, sizeof rec->name, "%s, %s %c. %06u", surnames[r % 16], given_names[(r >> 4) % 16],
                 'A' + (int) ((r >> 8) % 4), (unsigned) ((r >> 12) % 1000000));
        rec->salary = 20000 + (int) ((r >> 32) % 180000);
}

WORKLOAD_FUNCTION static int write_all(int fd, const void *buf, size_t size) {
        for (const char *p = buf; size > 0;) {
                ssize_t n = write(fd, p, size);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                size -= (size_t) n;
        }
        return 0;
}

/* Creates the database of n records. Returns 0 and fills *ret, whose records the caller unmaps,
 * or a negative errno. Touches none of the pages it maps. */
WORKLOAD_FUNCTION static int read_db(size_t n, struct db *ret) {
        static struct record batch[WRITE_BATCH]; /* static: other_fields stay zero */
        uint64_t random_state = 0x9e3779b97f4a7c15ULL, seed = 0;
        void *map;
        int fd, k, r;

        fd = memfd_create("process_db", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;

        for (size_t i = 0; i < n;) {
                for (k = 0; k < WRITE_BATCH && i < n; k++, i++) {
                        if (i % DUPLICATE_EVERY != DUPLICATE_EVERY - 1)
                                seed = random_next(&random_state);
                        make_record(&batch[k], seed);
                }
                r = write_all(fd, batch, (size_t) k * sizeof batch[0]);
                if (r < 0) {
                        close(fd);
                        return r;
                }
        }

        /* PROT_READ and no MAP_POPULATE: nothing is mapped until qsort touches it. */
        map = mmap(NULL, n * sizeof(struct record), PROT_READ, MAP_PRIVATE, fd, 0);
        r = map == MAP_FAILED ? -errno : 0;
        close(fd); /* the mapping keeps the memfd */
        if (r < 0)
                return r;
        *ret = (struct db) { .records = map, .n_records = n };
        return 0;
}

WORKLOAD_FUNCTION static const struct record **build_db_ptrs(const struct db *db) {
        const struct record **dbptrs = malloc(db->n_records * sizeof *dbptrs);

        if (!dbptrs)
                return NULL;
        /* Pointer arithmetic only: the records themselves stay untouched. */
        for (size_t i = 0; i < db->n_records; i++)
                dbptrs[i] = &db->records[i];
        return dbptrs;
}

/* The key of byte c in directory order: letters as lower case, digits as they are, 0 for what
 * the order skips. ASCII by hand rather than <ctype.h>, whose isalnum() calls __ctype_b_loc(),
 * a frame of its own. */
static inline int directory_key(unsigned char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A' + 'a';
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
                return c;
        return 0;
}

/* qsort()'s comparator for pointers to records: orders their names as a telephone directory
 * does, by letters and digits alone, without case, so that "McDonald" sorts with "Mc Donald"
 * and "O'Brien" with "OBrien"; names equal that way are ordered by their bytes. */
WORKLOAD_FUNCTION static int name_field_lt(const void *a, const void *b) {
        const unsigned char *x = (const unsigned char *) (*(const struct record *const *) a)->name;
        const unsigned char *y = (const unsigned char *) (*(const struct record *const *) b)->name;
        size_t i = 0, j = 0;

        for (;;) {
                int kx, ky;

                while (x[i] != '\0' && directory_key(x[i]) == 0)
                        i++;
                while (y[j] != '\0' && directory_key(y[j]) == 0)
                        j++;
                kx = directory_key(x[i]);
                ky = directory_key(y[j]);
                if (kx != ky)
                        return kx - ky;
                if (kx == 0) /* both names ended */
                        break;
                i++;
                j++;
        }
        for (i = 0; x[i] == y[i] && x[i] != '\0'; i++)
                ;
        return x[i] - y[i];
}

/* Keeps the first of each run of records with the same name. Returns how many are left. */
WORKLOAD_FUNCTION static size_t merge_adjacent_records(const struct record **dbptrs, size_t n) {
        size_t n_unique = 0;

        for (size_t i = 0; i < n; i++)
                if (n_unique == 0 || strcmp(dbptrs[i]->name, dbptrs[n_unique - 1]->name) != 0)
                        dbptrs[n_unique++] = dbptrs[i];
        return n_unique;
}

/* Returns the records sorted by name without duplicates, their number in *ret_n; NULL if out of
 * memory. The caller frees the array. */
WORKLOAD_FUNCTION static const struct record **uniquify_db(const struct db *db, size_t *ret_n) {
        const struct record **dbptrs = build_db_ptrs(db);

        if (!dbptrs)
                return NULL;
        qsort(dbptrs, db->n_records, sizeof *dbptrs, name_field_lt);
        call_barrier();
        *ret_n = merge_adjacent_records(dbptrs, db->n_records);
        call_barrier();
        return dbptrs;
}

WORKLOAD_FUNCTION static int *extract_salary_fields(const struct record **dbptrs, size_t n) {
        int *salaries = malloc(n * sizeof *salaries);

        if (!salaries)
                return NULL;
        for (size_t i = 0; i < n; i++)
                salaries[i] = dbptrs[i]->salary;
        return salaries;
}

/* qsort()'s comparator for ints. */
WORKLOAD_FUNCTION static int integer_lt(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;

        return (x > y) - (x < y);
}

/* Returns the salaries of the n records, sorted, for the caller to free; NULL if out of memory. */
WORKLOAD_FUNCTION static int *print_salary_list(const struct record **dbptrs, size_t n) {
        int *salaries = extract_salary_fields(dbptrs, n);

        if (!salaries)
                return NULL;
        qsort(salaries, n, sizeof *salaries, integer_lt);
        call_barrier();
        for (size_t i = 0; i < n; i++)
                printed = printed * 31 + (uint64_t) salaries[i];
        return salaries;
}

WORKLOAD_FUNCTION static void stat_summary(const int *salaries, size_t n, struct salary_stats *ret) {
        long long sum = 0;

        for (size_t i = 0; i < n; i++)
                sum += salaries[i];
        *ret = (struct salary_stats) {
                .min = salaries[0],
                .median = salaries[n / 2],
                .max = salaries[n - 1],
                .mean = sum / (long long) n,
        };
}

/* salaries: n > 0 of them, sorted. */
WORKLOAD_FUNCTION static void print_salary_stats(const int *salaries, size_t n) {
        stat_summary(salaries, n, &printed_stats);
        call_barrier();
}

int main(int argc, char **argv) {
        const struct record **dbptrs;
        unsigned long n_records;
        struct db db;
        int *salaries;
        size_t n;
        int r;

        workload_arg(argc, argv, 1, N_RECORDS_DEFAULT, &n_records);

        r = read_db(n_records, &db);
        if (r < 0) {
                fprintf(stderr, "%s: cannot create the database: %s\n", argv[0], strerror(-r));
                return EXIT_FAILURE;
        }
        dbptrs = uniquify_db(&db, &n);
        salaries = dbptrs ? print_salary_list(dbptrs, n) : NULL;
        if (!salaries) {
                fprintf(stderr, "%s: out of memory\n", argv[0]);
                return EXIT_FAILURE;
        }
        print_salary_stats(salaries, n);

        free(salaries);
        free(dbptrs);
        munmap((void *) db.records, db.n_records * sizeof(struct record));
        return EXIT_SUCCESS;
}
