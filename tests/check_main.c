/* check_main.c -- runs every chapter's Check suite.
   Each tests/test_chNN_*.c defines Suite *chNN_..._suite(void); the build
   lists them in suites.h, so adding a test file is enough to run it.

   With an argument K/N (0 <= K < N) it runs only the suites whose place in
   that list is K modulo N, so that N processes run the whole set in
   parallel (make check does so with the sanitizer build, on two cores). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#define SUITE(name) Suite *name(void);
#include "suites.h"
#undef SUITE

int main(int argc, char **argv)
{
    SRunner *runner = srunner_create(NULL);
    unsigned long k = 0, n = 1, i = 0;
    int failed;
    if (argc == 2 && (sscanf(argv[1], "%lu/%lu", &k, &n) != 2 || n == 0 || k >= n)) {
        fprintf(stderr, "usage: %s [K/N], 0 <= K < N\n", argv[0]);
        return EXIT_FAILURE;
    }
#define SUITE(name) if (i++ % n == k) srunner_add_suite(runner, name());
#include "suites.h"
#undef SUITE
    srunner_run_all(runner, CK_NORMAL);
    failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
