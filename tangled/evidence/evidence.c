/* evidence.c -- demo arguments, stable number formatting, traces. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/tokenizer.h"

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
static int text_cut;             /* a text of the ring did not fit */

/* Frees, newest first, what the demo owns beyond the first mark objects. */
static void drop_owned(llm_demo *d, size_t mark)
{
    while (d->nowned > mark) {
        d->nowned--;
        d->owned[d->nowned].release(d->owned[d->nowned].obj);
        free(d->owned[d->nowned].obj);
    }
}

int llm_demo_begin(llm_demo *d, int argc, char **argv, const char *name)
{
    const char *slug = strchr(name, '-');
    memset(d, 0, sizeof *d);
    d->name = name;
    d->ok = 1;
    if (llm_demo_start(argc, argv, name, &d->trace) != 0)
        return 2;
    printf("chapter=%.*s %s\n", slug != NULL ? (int)(slug - name - 2) : 0,
           name + 2, slug != NULL ? slug + 1 : name);
    return 0;
}

int llm_demo_end(llm_demo *d)
{
    drop_owned(d, 0);
    free(d->owned);
    d->owned = NULL;
    d->room = 0;
    if (text_cut)
        fprintf(stderr, "%s: a text was longer than %d bytes\n", d->name,
                LLM_TEXT_SIZE - 1);
    return llm_demo_finish(&d->trace, d->ok && !text_cut);
}

int llm_demo_call(llm_demo *d, llm_status st)
{
    if (!llm_demo_ok(d->name, st, &d->err))
        d->ok = 0;
    return d->ok;
}

int llm_demo_check(llm_demo *d, int holds, const char *what)
{
    if (!holds) {
        fprintf(stderr, "%s: check failed: %s\n", d->name, what);
        d->ok = 0;
    }
    return holds;
}

void *llm_own(llm_demo *d, size_t size, void (*release)(void *obj))
{
    void *obj = calloc(1, size);
    if (obj != NULL && d->nowned == d->room) {
        size_t room = d->room > 0 ? 2 * d->room : 16;
        llm_owned *grown = realloc(d->owned, room * sizeof *grown);
        if (grown == NULL) {
            free(obj);
            obj = NULL;
        } else {
            d->owned = grown;
            d->room = room;
        }
    }
    if (obj == NULL) {
        fprintf(stderr, "%s: out of memory for a demo object\n", d->name);
        d->ok = 0;
        return NULL;
    }
    d->owned[d->nowned].obj = obj;
    d->owned[d->nowned].release = release;
    d->nowned++;
    return obj;
}

void llm_demo_run(llm_demo *d, llm_section *section)
{
    size_t mark = d->nowned;
    if (d->ok)
        section(d);
    drop_owned(d, mark);
}

int llm_demo_main(int argc, char **argv, const char *name, llm_section *setup,
                  llm_section *const *sections)
{
    llm_demo d;
    if (llm_demo_begin(&d, argc, argv, name) != 0)
        return 2;
    if (setup != NULL)
        setup(&d);
    for (; *sections != NULL; sections++)
        llm_demo_run(&d, *sections);
    return llm_demo_end(&d);
}

const char *llm_put(llm_demo *d, const char *key, const char *value)
{
    llm_trace_value(&d->trace, key, value);
    return value;
}

void llm_row(llm_demo *d, const char *table, ...)
{
    const char *cells[32];
    const char *cell;
    size_t n = 0;
    va_list ap;
    va_start(ap, table);
    while ((cell = va_arg(ap, const char *)) != NULL && n < 32)
        cells[n++] = cell;
    va_end(ap);
    if (cell != NULL)                    /* more than 32 cells */
        text_cut = 1;
    llm_trace_row(&d->trace, table, n, cells);
}

void llm_refuse(llm_demo *d, const char *what, llm_status st)
{
    llm_demo_refusal(&d->trace, what, st, &d->err);
}

void llm_refuse_cells(llm_demo *d, const char *cells, const char *what,
                      llm_status st)
{
    llm_demo_refusal_cells(&d->trace, cells, what, st, &d->err);
}

int llm_refuse_as(llm_demo *d, const char *what, llm_status st, llm_status want)
{
    llm_refuse(d, what, st);
    if (st != want)
        fprintf(stderr, "%s: %s gave %s, not %s\n", d->name, what, llm_status_name(st),
                llm_status_name(want));
    return llm_demo_check(d, st == want, what);
}
/* The next buffer of the ring. */
static char *next_text(void)
{
    static char ring[LLM_TEXT_SLOTS][LLM_TEXT_SIZE];
    static size_t next;
    char *buf = ring[next];
    next = (next + 1) % LLM_TEXT_SLOTS;
    return buf;
}

/* buf as written; a text that filled the buffer to its end was cut. */
static const char *kept(const char *buf)
{
    if (strlen(buf) >= LLM_TEXT_SIZE - 1)
        text_cut = 1;
    return buf;
}

const char *llm_num(double x, int decimals)
{
    return kept(llm_fmt(next_text(), LLM_TEXT_SIZE, x, decimals));
}

const char *llm_trim(double x, int decimals)
{
    return kept(llm_fmt_trim(next_text(), LLM_TEXT_SIZE, x, decimals));
}

const char *llm_nums(const double *x, size_t n, int decimals)
{
    return kept(llm_fmt_list(next_text(), LLM_TEXT_SIZE, x, n, decimals));
}

/* "[a, b, c]" of x's values, each as number(x_i); "[]" when n is 0. */
static const char *list_of(char *buf, const double *x, size_t n, int decimals,
                           const char *(*number)(double, int))
{
    size_t used = 0, i;
    buf[0] = '\0';
    for (i = 0; i <= n && used < LLM_TEXT_SIZE; i++)
        used += (size_t)snprintf(buf + used, LLM_TEXT_SIZE - used, "%s%s",
                                 i == 0 ? "[" : i == n ? "" : ", ",
                                 i < n ? number(x[i], decimals) : "");
    if (used < LLM_TEXT_SIZE)
        snprintf(buf + used, LLM_TEXT_SIZE - used, "]");
    return kept(buf);
}

const char *llm_trims(const double *x, size_t n, int decimals)
{
    return list_of(next_text(), x, n, decimals, llm_trim);
}

/* "[[...], [...]]": each row a list of number(x_i). */
static const char *rows_of(const double *x, size_t rows, size_t cols, int decimals,
                           const char *(*number)(double, int))
{
    char *buf = next_text();
    size_t used = 0, i;
    buf[0] = '\0';
    for (i = 0; i <= rows && used < LLM_TEXT_SIZE; i++)
        used += (size_t)snprintf(buf + used, LLM_TEXT_SIZE - used, "%s%s",
                                 i == 0 ? "[" : i == rows ? "" : ", ",
                                 i < rows ? list_of(next_text(), x + i * cols, cols,
                                                    decimals, number) : "");
    if (used < LLM_TEXT_SIZE)
        snprintf(buf + used, LLM_TEXT_SIZE - used, "]");
    return kept(buf);
}

const char *llm_rows(const double *x, size_t rows, size_t cols, int decimals)
{
    return rows_of(x, rows, cols, decimals, llm_num);
}

const char *llm_trim_rows(const double *x, size_t rows, size_t cols, int decimals)
{
    return rows_of(x, rows, cols, decimals, llm_trim);
}

const char *llm_sizes(const size_t *sizes, size_t n)
{
    return kept(llm_fmt_sizes(next_text(), LLM_TEXT_SIZE, sizes, n));
}

const char *llm_text(const char *fmt, ...)
{
    char *buf = next_text();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, LLM_TEXT_SIZE, fmt, ap);
    va_end(ap);
    return kept(buf);
}

const char *llm_yes(int holds)
{
    return holds ? "yes" : "no";
}

const char *llm_hex(const unsigned char *b, size_t n)
{
    char *buf = next_text();
    size_t i, used = 0;
    buf[0] = '\0';
    for (i = 0; i < n && i < 64; i++)
        used += (size_t)snprintf(buf + used, LLM_TEXT_SIZE - used, "%s%02X", i > 0 ? " " : "",
                                 b[i]);
    return kept(buf);
}

const char *llm_unit_text(const unsigned char *b, size_t n)
{
    char *buf;
    size_t i, used = 0, scalars;
    if (llm_utf8_count(b, n, &scalars, NULL) != LLM_OK)
        return NULL;
    buf = next_text();
    for (i = 0; i < n && used + 3 < LLM_TEXT_SIZE; i++) {
        if (b[i] == ' ') {                  /* U+00B7, the middle dot */
            buf[used++] = (char)0xC2;
            buf[used++] = (char)0xB7;
        } else {
            buf[used++] = (char)b[i];
        }
    }
    buf[used] = '\0';
    return kept(buf);
}
