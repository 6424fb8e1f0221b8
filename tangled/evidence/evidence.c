/* evidence.c -- demo arguments, stable number formatting, traces. */
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"

int llm_demo_start(int argc, char **argv, const char *demo, llm_trace *trace)
{
    trace->fp = NULL;
    trace->failed = 0;
    if (argc == 1)
        return 0;
    if (argc == 3 && strcmp(argv[1], "--trace") == 0) {
        trace->fp = fopen(argv[2], "w");
        if (trace->fp != NULL)
            return 0;
        fprintf(stderr, "%s: cannot write the trace file '%s'\n", demo, argv[2]);
        return 2;
    }
    fprintf(stderr, "%s: unexpected argument '%s'\nusage: %s [--trace FILE]\n",
            demo, argv[1], demo);
    return 2;
}

int llm_demo_finish(llm_trace *trace, int ok)
{
    if (trace->fp != NULL) {
        if (ferror(trace->fp))
            trace->failed = 1;
        if (fclose(trace->fp) != 0)
            trace->failed = 1;
        trace->fp = NULL;
    }
    if (trace->failed)
        fprintf(stderr, "the trace could not be written\n");
    return ok && !trace->failed ? 0 : 1;
}
char *llm_fmt(char *buf, size_t size, double x, int decimals)
{
    char *p;
    if (x != x) {
        snprintf(buf, size, "nan");
        return buf;
    }
    snprintf(buf, size, "%.*f", decimals, x);
    if (buf[0] == '-') {
        for (p = buf + 1; *p == '0' || *p == '.'; p++)
            ;
        if (*p == '\0')                       /* every digit is zero */
            memmove(buf, buf + 1, strlen(buf));
    }
    return buf;
}

char *llm_fmt_list(char *buf, size_t size, const double *x, size_t n, int decimals)
{
    char one[64];
    size_t used = 0, i;
    buf[0] = '\0';
    for (i = 0; i <= n && used < size; i++) {
        const char *sep = i == 0 ? "[" : ", ";
        if (i == n)
            sep = i == 0 ? "[]" : "]";
        used += (size_t)snprintf(buf + used, size - used, "%s%s", sep,
                                 i < n ? llm_fmt(one, sizeof one, x[i], decimals) : "");
    }
    return buf;
}

char *llm_fmt_trim(char *buf, size_t size, double x, int decimals)
{
    size_t n;
    llm_fmt(buf, size, x, decimals);
    if (strchr(buf, '.') == NULL)
        return buf;
    n = strlen(buf);
    while (n > 0 && buf[n - 1] == '0')
        buf[--n] = '\0';
    if (n > 0 && buf[n - 1] == '.')
        buf[--n] = '\0';
    return buf;
}
void llm_trace_value(llm_trace *trace, const char *key, const char *value)
{
    if (trace->fp != NULL && fprintf(trace->fp, "v\t%s\t%s\n", key, value) < 0)
        trace->failed = 1;
}

void llm_trace_row(llm_trace *trace, const char *table, size_t ncells,
                   const char *const *cells)
{
    size_t i;
    if (trace->fp == NULL)
        return;
    if (fprintf(trace->fp, "r\t%s", table) < 0)
        trace->failed = 1;
    for (i = 0; i < ncells; i++)
        if (fprintf(trace->fp, "\t%s", cells[i]) < 0)
            trace->failed = 1;
    if (fputc('\n', trace->fp) == EOF)
        trace->failed = 1;
}
int llm_demo_ok(const char *demo, llm_status st, const llm_error *err)
{
    if (st == LLM_OK)
        return 1;
    char where[100];
    fprintf(stderr, "%s: unexpected %s error in %s: %s\n", demo,
            llm_status_name(st), llm_error_where(where, sizeof where, err),
            err != NULL ? err->message : "");
    return 0;
}

void llm_demo_refusal_cells(llm_trace *trace, const char *cells,
                            const char *what, llm_status st,
                            const llm_error *err)
{
    const int ok = st == LLM_OK || err == NULL;
    const char *code = llm_status_name(st);
    char where[100];
    const char *stage = ok ? "accepted" : llm_error_where(where, sizeof where, err);
    const char *message = ok ? "accepted" : err->message;
    const char *row[8];
    char both[160];
    size_t n = 0;
    printf("reject %s: %s (%s)\n", what, code, stage);
    snprintf(both, sizeof both, "%s (`%s`)", code, stage);
    row[n++] = what;
    for (; cells != NULL && *cells != '\0' && n < 8; cells++)
        row[n++] = *cells == 'c' ? code
                 : *cells == 's' ? stage
                 : *cells == 'm' ? message
                 : *cells == 'b' ? both : "?";
    llm_trace_row(trace, "refusals", n, row);
}

void llm_demo_refusal(llm_trace *trace, const char *what, llm_status st,
                      const llm_error *err)
{
    llm_demo_refusal_cells(trace, "cm", what, st, err);
}
