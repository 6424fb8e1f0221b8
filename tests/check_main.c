/* check_main.c -- runs every chapter's Check suite.
   Each tests/test_chNN_*.c defines Suite *chNN_..._suite(void); the build
   lists them in suites.h, so adding a test file is enough to run it. */
#include <check.h>
#include <stdlib.h>

#define SUITE(name) Suite *name(void);
#include "suites.h"
#undef SUITE

int main(void)
{
    SRunner *runner = srunner_create(NULL);
    int failed;
#define SUITE(name) srunner_add_suite(runner, name());
#include "suites.h"
#undef SUITE
    srunner_run_all(runner, CK_NORMAL);
    failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
