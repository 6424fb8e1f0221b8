/* tests/support.h -- what the test files share. */
#ifndef LLM_TESTS_SUPPORT_H
#define LLM_TESTS_SUPPORT_H

#include "llm/error.h"

/* err's stage as the reports print it: "stage", or "stage <- cause" when
   the refusal started deeper (chapter 8's llm_error_where). One buffer:
   use the result before the next call. */
static inline const char *where(const llm_error *err)
{
    static char buf[100];
    return llm_error_where(buf, sizeof buf, err);
}

/* The stage that refused first: err's cause, or its stage when the refusal
   started there. */
static inline const char *first_stage(const llm_error *err)
{
    return err->cause[0] != '\0' ? err->cause : err->stage;
}

#endif
