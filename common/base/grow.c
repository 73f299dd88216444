/* Arrays that grow by appending (grow.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"

int grow_array(void **array, size_t *cap, size_t need, size_t size) {
        size_t n = *cap ? *cap : 16;
        void *a;

        if (need <= *cap)
                return 0;
        while (n < need) {
                if (n > SIZE_MAX / 2)
                        return -ENOMEM;
                n *= 2;
        }
        if (size && n > SIZE_MAX / size)
                return -ENOMEM;
        a = realloc(*array, n * size);
        if (!a)
                return -ENOMEM;
        *array = a;
        *cap = n;
        return 0;
}
