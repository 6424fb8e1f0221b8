# LLM from Scratch in C -- the book's build.
#
#   make            install missing packages (as root), tangle, build the
#                   library, demos, reports, traces, figures, HTML and PDFs
#   make check      verify everything (see README.md); prints each stage's time
#   make tangle     chapters/*.nw -> tangled/ (only changed files are touched)
#   make expected   re-freeze every report in expected/ (on purpose only)
#   make html | pdf | demos | reports | unit
#   make bench      time the engine (not part of make check)
#   make mutate     mutation testing of the unit tests (not part of make check)
#
# Variables: CC (gcc), OPT (-O2), B (build): the build directory, so that
# other compilers and optimisation levels can build side by side.

SHELL := /bin/sh
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SUFFIXES:

ifeq ($(origin CC),default)
CC := gcc
endif
OPT ?= -O2
B   ?= build

WARN     := -std=c11 -Wall -Wextra -Wpedantic -Werror
NUMERIC  := -ffp-contract=off -fno-fast-math
SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_ENV  := ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1
CPPFLAGS := -Itangled/include
ALL_CFLAGS = $(WARN) $(NUMERIC) $(OPT) -g $(CPPFLAGS) -MMD -MP

CHAPTERS  := $(sort $(wildcard chapters/[0-9][0-9]-*.nw))
SLUGS     := $(patsubst chapters/%.nw,%,$(CHAPTERS))
LIB_SRCS  := $(sort $(wildcard tangled/src/*.c))
LIB_OBJS  := $(patsubst tangled/src/%.c,$(B)/obj/%.o,$(LIB_SRCS))
SAN_OBJS  := $(patsubst tangled/src/%.c,$(B)/san/%.o,$(LIB_SRCS))
EVID_SRCS := $(sort $(wildcard tangled/evidence/*.c))
EVID_OBJS := $(patsubst tangled/evidence/%.c,$(B)/evidence/%.o,$(EVID_SRCS))
EVID_SAN  := $(patsubst tangled/evidence/%.c,$(B)/san/evidence/%.o,$(EVID_SRCS))
# The demo layer (reports, traces, refusal rows) is an archive of its own:
# demos, tests and benchmarks link it, the library never does.
EVID_LIB  := $(B)/libllm-evidence.a $(B)/libllm.a
EVID_SLIB := $(B)/san/libllm-evidence.a $(B)/san/libllm.a
DEMOS     := $(addprefix $(B)/bin/ch,$(SLUGS))
REPORTS   := $(addprefix $(B)/reports/ch,$(addsuffix .txt,$(SLUGS)))
TRACES    := $(addprefix $(B)/traces/ch,$(addsuffix .trace,$(SLUGS)))
TEST_SRCS := $(sort $(wildcard tests/*.c))
FIGS      := $(patsubst figures/%.tex,%,$(sort $(wildcard figures/ch[0-9][0-9]-*.tex)))
LANGS     := en ru
PAGES     := $(SLUGS) identifiers glossary corpus index
# What every page's book.lua run reads besides the page itself.
BOOK_FILTER := tools/book.lua tools/filter-util.lua book/trace-words.txt

.PHONY: all build deps tangle lib demos reports unit figures html pdf bench \
        check check-reports check-portable check-valgrind check-parity \
        check-site check-hostile check-layers check-pdf expected clean mutate \
        $(addprefix pdf-parts-,$(LANGS))

all:
	@tools/install-deps.sh
	@$(MAKE) --no-print-directory tangle
	@$(MAKE) --no-print-directory build

build: lib demos reports $(B)/bin/unit-tests $(B)/bin/unit-tests-san figures html pdf

deps:
	@tools/install-deps.sh

# ------------------------------------------------------------------ tangle --
tangle:
	@tools/tangle.sh tangled $(CHAPTERS)

# ----------------------------------------------------------------- library --
$(B)/obj/%.o: tangled/src/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/san/%.o: tangled/src/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -c $< -o $@

$(B)/libllm.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/san/libllm.a: $(SAN_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/evidence/%.o: tangled/evidence/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/san/evidence/%.o: tangled/evidence/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -c $< -o $@

$(B)/libllm-evidence.a: $(EVID_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/san/libllm-evidence.a: $(EVID_SAN)
	@rm -f $@
	ar rcs $@ $^

lib: $(B)/libllm.a $(B)/libllm-evidence.a

# No source of the library includes a header of the demo layer, and the
# library's archive defines none of the names the demo layer's archive does.
DEMO_HEADERS := evidence.h probe.h fixtures.h
check-layers: $(B)/libllm.a $(B)/libllm-evidence.a
	@status=0; \
	for h in $(DEMO_HEADERS); do \
	  for f in $$(grep -l "\"llm/$$h\"" tangled/src/*.c tangled/src/*.h tangled/include/llm/*.h); do \
	    case " $(DEMO_HEADERS) " in *" $${f##*/} "*) continue ;; esac; \
	    echo "layers: $$f includes llm/$$h; the library must not depend on the demo layer"; \
	    status=1; \
	  done; \
	done; \
	leaked=$$( { nm -g --defined-only $(B)/libllm-evidence.a | awk 'NF == 3 { print "E", $$3 }'; \
	             nm -g --defined-only $(B)/libllm.a | awk 'NF == 3 { print "L", $$3 }'; } | \
	           awk '$$1 == "E" { e[$$2] = 1 } $$1 == "L" && ($$2 in e) { print $$2 }'); \
	if [ -n "$$leaked" ]; then echo "layers: libllm.a defines demo-layer functions:" $$leaked; status=1; fi; \
	exit $$status

# ------------------------------------------------------------------- demos --
$(B)/bin/%: tangled/demos/%.c $(EVID_LIB)
	@mkdir -p $(@D) $(B)/dep
	$(CC) $(ALL_CFLAGS) -MF $(B)/dep/$*.d $< $(EVID_LIB) -lm -o $@

demos: $(DEMOS)

# Each demo prints its report and writes its trace in one run. Unchanged
# files keep their timestamps, so figures and pages that read them are not
# rebuilt when a change did not alter any number.
$(B)/reports/%.txt $(B)/traces/%.trace &: $(B)/bin/%
	@mkdir -p $(B)/reports $(B)/traces
	$< --trace $(B)/traces/$*.trace.new > $(B)/reports/$*.txt.new
	@cpif $(B)/traces/$*.trace < $(B)/traces/$*.trace.new
	@cpif $(B)/reports/$*.txt < $(B)/reports/$*.txt.new
	@rm -f $(B)/traces/$*.trace.new $(B)/reports/$*.txt.new

# The demos that read the book's corpus (corpus/): their reports and traces
# change when it does.
CORPUS_DEMOS := $(patsubst tangled/demos/ch%.c,%,$(shell grep -l 'corpus/corpus.txt' tangled/demos/*.c))
$(foreach s,$(CORPUS_DEMOS),$(B)/reports/ch$(s).txt $(B)/traces/ch$(s).trace): corpus/corpus.txt corpus/splits.txt

reports: $(REPORTS)

check-reports: $(REPORTS)
	@status=0; for s in $(SLUGS); do \
	  if [ ! -f expected/ch$$s.txt ]; then \
	    echo "report: expected/ch$$s.txt is missing (run make expected on purpose)"; status=1; \
	  elif ! diff -u expected/ch$$s.txt $(B)/reports/ch$$s.txt; then \
	    echo "report: $(B)/reports/ch$$s.txt differs from expected/ch$$s.txt"; status=1; \
	  fi; \
	done; exit $$status

expected: $(REPORTS)
	@mkdir -p expected
	@for s in $(SLUGS); do cp $(B)/reports/ch$$s.txt expected/ch$$s.txt; done
	@echo "expected/: $(words $(SLUGS)) reports frozen; say why in the commit message"

# The same reports from another compiler and optimisation level.
check-portable:
	@$(MAKE) -s --no-print-directory B=build/alt/clang-O0 CC=clang OPT=-O0 check-reports
	@$(MAKE) -s --no-print-directory B=build/alt/gcc-O3 CC=gcc OPT=-O3 check-reports

# Each demo runs under valgrind again only when its binary changed
# (tools/once.sh keeps a stamp per demo); two run at a time.
VALGRIND := valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=all
check-valgrind: $(DEMOS)
	@printf '%s\n' $(SLUGS) | xargs -P 2 -I{} sh -c \
	  'tools/once.sh $(B)/stamps/valgrind/ch{} $(B)/bin/ch{} -- \
	     $(VALGRIND) $(B)/bin/ch{} --trace /dev/null > /dev/null || { echo "valgrind: ch{}"; exit 1; }' \
	  | grep -v 'not run again' || true; \
	n=$$(ls $(B)/stamps/valgrind 2>/dev/null | wc -l); \
	for s in $(SLUGS); do [ -f $(B)/stamps/valgrind/ch$$s ] || { echo "valgrind: ch$$s failed"; exit 1; }; done; \
	echo "valgrind: $$n demos clean"


# ------------------------------------------------------------- benchmarks --
# tangled/bench/*.c are timing programs (make bench, not part of make check):
# their output depends on the machine, so nothing compares it.
BENCH_SRCS := $(sort $(wildcard tangled/bench/*.c))
BENCHES    := $(patsubst tangled/bench/%.c,$(B)/bench/%,$(BENCH_SRCS))

$(B)/bench/%: tangled/bench/%.c $(EVID_LIB)
	@mkdir -p $(@D) $(B)/dep
	$(CC) $(ALL_CFLAGS) -MF $(B)/dep/bench-$*.d $< $(EVID_LIB) -lm -o $@

bench: $(BENCHES)
	@for b in $(BENCHES); do echo "== $$b"; $$b || exit 1; done

# ------------------------------------------------------- the hostile caller --
# tests/hostile/hostile.c calls the library with random, often wrong
# arguments, each seeded case in a forked child, under ASan and UBSan.
# HOSTILE_CASES=50000 make check-hostile runs a longer budget.
HOSTILE_CASES ?= 3000
HOSTILE_SEED  ?= 1

$(B)/bin/hostile-san: tests/hostile/hostile.c $(B)/san/libllm.a
	@mkdir -p $(@D) $(B)/dep
	$(CC) $(ALL_CFLAGS) $(SAN) -MF $(B)/dep/hostile.d $< $(B)/san/libllm.a -lm -o $@

check-hostile: $(B)/bin/hostile-san
	@tools/once.sh $(B)/stamps/hostile $(B)/bin/hostile-san -- \
	  env $(SAN_ENV) $(B)/bin/hostile-san $(HOSTILE_CASES) $(HOSTILE_SEED)

# ---------------------------------------------------------- mutation tests --
# tools/mutants.txt lists single-point changes of tangled/src; each is built
# in build/mutate and must make the unit tests fail.
mutate:
	@tools/mutate.sh tools/mutants.txt

# -------------------------------------------------------------- unit tests --
$(B)/tests/suites.h: $(TEST_SRCS)
	@mkdir -p $(@D)
	@grep -ho 'Suite \*[a-z0-9_]*_suite(void)' $(TEST_SRCS) | \
	  sed 's/Suite \*\(.*\)(void)/SUITE(\1)/' > $@.tmp && cpif $@ < $@.tmp && rm -f $@.tmp

# Each test file compiles on its own, so editing one recompiles only it.
TEST_OBJS     := $(patsubst tests/%.c,$(B)/tests/%.o,$(TEST_SRCS))
TEST_SAN_OBJS := $(patsubst tests/%.c,$(B)/tests/san/%.o,$(TEST_SRCS))

$(B)/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -I$(B)/tests $$(pkg-config --cflags check) -c $< -o $@

$(B)/tests/san/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -I$(B)/tests $$(pkg-config --cflags check) -c $< -o $@

$(B)/tests/check_main.o $(B)/tests/san/check_main.o: $(B)/tests/suites.h

$(B)/bin/unit-tests: $(TEST_OBJS) $(EVID_LIB)
	@mkdir -p $(@D)
	$(CC) $(TEST_OBJS) $(EVID_LIB) $$(pkg-config --libs check) -lm -o $@

$(B)/bin/unit-tests-san: $(TEST_SAN_OBJS) $(EVID_SLIB)
	@mkdir -p $(@D)
	$(CC) $(SAN) $(TEST_SAN_OBJS) $(EVID_SLIB) $$(pkg-config --libs check) -lm -o $@

unit: $(B)/bin/unit-tests $(B)/bin/unit-tests-san
	$(B)/bin/unit-tests
	$(SAN_ENV) $(B)/bin/unit-tests-san

# ----------------------------------------------------------------- figures --
# A figure is one TikZ source, compiled per edition (labels may be
# translated) to PDF for print, then converted to SVG for the web.
define figure_rules
$(B)/figures/$(1)/%.pdf: figures/%.tex book/figure-preamble.tex tools/figure.sh
	@tools/figure.sh $(1) $$< $$@ $(B)

# The SVG comes from the XDV tools/figure.sh writes next to the PDF: text
# stays text, in the book's fonts embedded as WOFF2, on the PDF's page (the
# standalone class's paper size, not the box of every path drawn, which
# counts the parts a plot clips away). A figure whose smallest text would be
# too small in print is refused (tools/figure-size.awk).
$(B)/html/$(1)/figures/%.svg: $(B)/figures/$(1)/%.pdf tools/figure-size.awk
	@mkdir -p $$(@D)
	@dvisvgm --font-format=woff2 --bbox=papersize -v0 -o $$@.new $$(<:.pdf=.xdv) > $$@.log 2>&1 || { cat $$@.log >&2; exit 1; }; rm -f $$@.log
	@awk -v name=$$@ -f tools/figure-size.awk $$@.new || { rm -f $$@.new; exit 1; }
	@mv $$@.new $$@
endef
$(foreach l,$(LANGS),$(eval $(call figure_rules,$(l))))

# The data a chapter's figures read: its trace as pgfkeys.
$(B)/figures/data/%.tex: $(B)/traces/%.trace tools/trace2tex.awk book/trace-words.txt
	@mkdir -p $(@D)
	awk -f tools/trace2tex.awk book/trace-words.txt $< > $@

PANDOC_HTML = pandoc --from markdown --to html5 --standalone --mathml --highlight-style=tango \
  --template book/template.html --lua-filter tools/book.lua --lua-filter tools/web.lua \
  -M iddefs=$(B)/weave/html-$(1)/iddefs.md -M searchdir=$(B)/search/$(1) \
  --metadata-file book/metadata.yaml -M lang=$(1) -M tracedir=$(B)/traces \
  -M figdir=figures -M figext=svg -M figcheck=$(B)/html/$(1)/figures -M reportdir=$(B)/reports

chapter_of = $(firstword $(subst -, ,$(1)))
figs_of = $(filter $(call chapter_of,ch$(1))-%,$(FIGS))

# Per chapter ($(1) = NN-slug): its figures read its trace; its pages need
# the trace and the figures of their edition.
define chapter_rules
$(foreach l,$(LANGS),$(addprefix $(B)/figures/$(l)/,$(addsuffix .pdf,$(call figs_of,$(1))))): \
  $(B)/figures/data/ch$(1).tex
$(foreach l,$(LANGS),$(eval $(call chapter_page,$(1),$(l))))
endef

define chapter_page
$(B)/html/$(2)/$(1).html: $(B)/weave/html-$(2)/$(1).md $(B)/traces/ch$(1).trace $(B)/reports/ch$(1).txt \
    $(addprefix $(B)/html/$(2)/figures/,$(addsuffix .svg,$(call figs_of,$(1)))) \
    $(BOOK_FILTER) book/template.html book/metadata.yaml
	@mkdir -p $$(@D)
	$(call PANDOC_HTML,$(2)) --number-sections \
	  --number-offset=$$$$(expr $(call chapter_of,$(1)) - 1) -o $$@ $$<
endef

$(foreach s,$(SLUGS),$(eval $(call chapter_rules,$(s))))

figures: $(foreach l,$(LANGS),$(addprefix $(B)/figures/$(l)/,$(addsuffix .pdf,$(FIGS))) \
                             $(addprefix $(B)/html/$(l)/figures/,$(addsuffix .svg,$(FIGS))))

# ------------------------------------------------------------------- weave --
# noweb's front end and indexers, then our back end, over all chapters at
# once (chunks and identifiers cross chapters). Only files whose text
# changed are replaced, so pandoc reruns only for the chapters touched.
NOWEB_LIB := /usr/lib/noweb
$(B)/weave/stamp: $(CHAPTERS) tools/nwpandoc.awk tools/weave.sh
	@tools/weave.sh $(B)/weave $(CHAPTERS)
	@touch $@

$(foreach k,html-en html-ru pdf-en pdf-ru,$(B)/weave/$(k)/%.md): $(B)/weave/stamp ;

define html_rules
$(B)/html/$(1)/identifiers.html: $(B)/weave/html-$(1)/identifiers.md $(BOOK_FILTER) book/template.html book/metadata.yaml
	@mkdir -p $$(@D)
	$(call PANDOC_HTML,$(1)) -M slug=identifiers -o $$@ $$<

$(B)/html/$(1)/glossary.html: $(B)/weave/glossary-$(1).md $(BOOK_FILTER) book/template.html book/metadata.yaml
	@mkdir -p $$(@D)
	$(call PANDOC_HTML,$(1)) -M slug=glossary -M title-en="Glossary" -M title-ru="Словарь терминов" -o $$@ $$<

$(B)/html/$(1)/corpus.html: $(B)/weave/corpus-$(1).md $(BOOK_FILTER) book/template.html book/metadata.yaml
	@mkdir -p $$(@D)
	$(call PANDOC_HTML,$(1)) -M slug=corpus -M title-en="The book's corpus" -M title-ru="Корпус книги" -o $$@ $$<

# The corpus, shown whole (corpus/README.md gives its format).
$(B)/weave/corpus-$(1).md: corpus/splits.txt corpus/corpus.txt tools/corpus.awk
	@mkdir -p $$(@D)
	awk -f tools/corpus.awk -v lang=$(1) corpus/splits.txt corpus/corpus.txt > $$@

$(B)/weave/glossary-$(1).md: book/glossary.txt tools/glossary.awk
	@mkdir -p $$(@D)
	awk -f tools/glossary.awk -v page=$(1) book/glossary.txt > $$@

$(B)/weave/front-$(1).md: book/front.md tools/edition.awk
	@mkdir -p $$(@D)
	awk -f tools/edition.awk -v lang=$(1) book/front.md > $$@

$(B)/html/$(1)/index.html: $(B)/weave/front-$(1).md $(B)/weave/html-$(1)/toc.md $(BOOK_FILTER) book/template.html book/metadata.yaml
	@mkdir -p $$(@D)
	$(call PANDOC_HTML,$(1)) -M slug=index -M title-en="Contents" -M title-ru="Оглавление" \
	  -o $$@ $(B)/weave/front-$(1).md $(B)/weave/html-$(1)/toc.md

$(B)/html/$(1)/style.css: book/style.css
	@mkdir -p $$(@D)
	cp $$< $$@

# tools/web.lua: math, links from prose to the identifiers' definitions, a
# page's contents, and its part of the search index ($(B)/search/LANG/PAGE.js,
# written with the page and joined into search-index.js for book/search.js)
$(foreach p,$(PAGES),$(B)/html/$(1)/$(p).html): tools/web.lua $(B)/weave/html-$(1)/iddefs.md

$(B)/html/$(1)/search.html: book/search.md $(BOOK_FILTER) tools/web.lua book/template.html book/metadata.yaml
	@mkdir -p $$(@D)
	$(call PANDOC_HTML,$(1)) -M slug=search -M search-page=true -M title-en="Search" -M title-ru="Поиск" -o $$@ $$<

$(B)/html/$(1)/search.js: book/search.js
	@mkdir -p $$(@D)
	cp $$< $$@

$(B)/html/$(1)/search-index.js: $(foreach p,$(PAGES),$(B)/html/$(1)/$(p).html)
	@{ printf 'window.SEARCH_INDEX = [\n'; cat $(foreach p,$(PAGES),$(B)/search/$(1)/$(p).js); printf '];\n'; } > $$@
endef
$(foreach l,$(LANGS),$(eval $(call html_rules,$(l))))

# The front page names the chapters present and the PDFs' sizes; building
# the PDFs writes it again (tools/landing.sh), so that a page's edit does
# not wait for the PDFs.
$(B)/html/index.html: book/landing.html tools/landing.sh $(foreach l,$(LANGS),$(foreach s,$(SLUGS),$(B)/html/$(l)/$(s).html))
	@mkdir -p $(@D)
	tools/landing.sh $< $(B)/html $(SLUGS) > $@

html: $(B)/html/index.html $(foreach l,$(LANGS),$(foreach p,$(PAGES) search,$(B)/html/$(l)/$(p).html) \
        $(B)/html/$(l)/style.css $(B)/html/$(l)/search.js $(B)/html/$(l)/search-index.js)

# --------------------------------------------------------------------- pdf --
# The front page again, for the PDFs' sizes (only if the site is built).
LANDING_AGAIN = if [ -f $(B)/html/index.html ]; then \
  tools/landing.sh book/landing.html $(B)/html $(SLUGS) > $(B)/html/index.html.new && \
  cpif $(B)/html/index.html < $(B)/html/index.html.new && rm -f $(B)/html/index.html.new; fi

# What every page of an edition's PDF depends on, besides its chapters.
PDF_TOOLS := $(BOOK_FILTER) tools/print.lua tools/pdf.sh tools/check-pdf.sh book/metadata.yaml book/header.tex
pdf_shared = $(B)/weave/front-$(1).md $(B)/weave/glossary-$(1).md $(B)/weave/corpus-$(1).md $(PDF_TOOLS)
# A chapter's own inputs.
pdf_part = $(B)/weave/pdf-$(2)/$(1).md $(B)/traces/ch$(1).trace $(B)/reports/ch$(1).txt \
  $(addprefix $(B)/figures/$(2)/,$(addsuffix .pdf,$(call figs_of,$(1))))

# The whole book. Building it also stamps every chapter and the index as
# checked ($(B)/pdf/LANG/part/SLUG.ok, identifiers.ok).
define pdf_rules
$(B)/html/book-$(1).pdf: $(call pdf_shared,$(1)) $(foreach s,$(SLUGS),$(call pdf_part,$(s),$(1))) \
    $(B)/weave/pdf-$(1)/identifiers.md
	@tools/pdf.sh $(1) $(B) $$@ $(SLUGS)
	@mkdir -p $(B)/pdf/$(1)/part && cd $(B)/pdf/$(1)/part && touch $(addsuffix .ok,$(SLUGS) identifiers)

pdf-parts-$(1): $(foreach s,$(SLUGS) identifiers,$(B)/pdf/$(1)/part/$(s).ok)

# The index on its own, when a code edit changed its entries; after the
# chapters' parts, whose anchors it checks its links against.
$(B)/pdf/$(1)/part/identifiers.ok: $(B)/weave/pdf-$(1)/identifiers.md | $(foreach s,$(SLUGS),$(B)/pdf/$(1)/part/$(s).ok)
	@tools/pdf.sh --part $(1) $(B) identifiers
	@touch $$@
endef
$(foreach l,$(LANGS),$(eval $(call pdf_rules,$(l))))

# One chapter typeset and checked on its own (tools/pdf.sh --part).
define pdf_part_rule
$(B)/pdf/$(2)/part/$(1).ok: $(call pdf_part,$(1),$(2))
	@tools/pdf.sh --part $(2) $(B) $(1)
	@touch $$@
endef
$(foreach l,$(LANGS),$(foreach s,$(SLUGS),$(eval $(call pdf_part_rule,$(s),$(l)))))

pdf: $(foreach l,$(LANGS),$(B)/html/book-$(l).pdf)
	@$(LANDING_AGAIN)

# make check's PDF stage: an edition's whole book when there is none yet or
# when something other than its chapters and its index changed (front
# matter, glossary, tools, preamble) or a chapter has never been part of it
# (a new chapter moves the others' anchors); otherwise each changed chapter, and
# the index if its entries changed, on its own, which is what an edit of one
# chapter can break; when the parts fail on their own, the whole books,
# which is the verdict that counts. make builds the whole books.
rparen := )
check-pdf:
	@goals=; for l in $(LANGS); do \
	  whole=; [ -f $(B)/html/book-$$l.pdf ] && [ -f $(B)/pdf/$$l/current.tex ] || whole=1; \
	  if [ -z "$$whole" ]; then \
	    case $$l in \
	      $(foreach e,$(LANGS),$(e)$(rparen) shared="$(call pdf_shared,$(e))" ;;) \
	    esac; \
	    for f in $$shared; do [ $$f -nt $(B)/html/book-$$l.pdf ] && whole=1; done; \
	    for s in $(SLUGS); do [ -f $(B)/pdf/$$l/part/$$s.ok ] || whole=1; done; \
	  fi; \
	  if [ -n "$$whole" ]; then goals="$$goals $(B)/html/book-$$l.pdf"; else goals="$$goals pdf-parts-$$l"; fi; \
	done; \
	$(MAKE) -s --no-print-directory -j2 $$goals || { \
	  case "$$goals" in *pdf-parts-*) ;; *) exit 1 ;; esac; \
	  echo "check-pdf: the parts did not check on their own (two changed chapters may link to each other's new anchors); typesetting the whole books"; \
	  $(MAKE) -s --no-print-directory -j2 $(foreach l,$(LANGS),$(B)/html/book-$(l).pdf); }
	@$(LANDING_AGAIN)

# ------------------------------------------------------------------- check --
check-parity:
	@awk -f tools/parity.awk $(CHAPTERS) book/front.md
	@awk -f tools/glossary.awk book/glossary.txt $(CHAPTERS) book/front.md
	@awk -f tools/chapter-refs.awk $(CHAPTERS) book/front.md

check-site: html pdf
	@tools/check-site.sh $(B)/html $(B)/stamps/site

# make check prints each stage's time and the whole run's. After an edit,
# the stages that run binaries (unit tests, sanitizers, the hostile caller,
# valgrind) re-run only for binaries whose bytes changed, html rebuilds
# only what the edit touched, pdf typesets and checks only the chapters that
# changed (check-pdf), and the browser opens again only the pages whose
# check depends on something that changed (tools/site-keys.awk); a check
# from clean runs everything.
check:
	@date +%s.%N > $(B)/.check-start 2>/dev/null || { mkdir -p $(B); date +%s.%N > $(B)/.check-start; }
	@tools/install-deps.sh
	@tools/stage tangle     tools/check-tangle.sh $(B)/tangle-check $(CHAPTERS)
	@tools/stage parity     $(MAKE) --no-print-directory check-parity
	@tools/stage build      $(MAKE) -s --no-print-directory lib demos $(B)/bin/unit-tests $(B)/bin/unit-tests-san $(B)/bin/hostile-san
	@tools/stage layers     $(MAKE) -s --no-print-directory check-layers
	@tools/stage stages     tools/check-stages.sh
	@tools/stage unit       tools/once.sh $(B)/stamps/unit $(B)/bin/unit-tests -- $(B)/bin/unit-tests
	@tools/stage unit-asan  tools/once.sh $(B)/stamps/unit-asan $(B)/bin/unit-tests-san -- \
	                          tools/shards.sh 2 env $(SAN_ENV) $(B)/bin/unit-tests-san
	@tools/stage hostile    $(MAKE) -s --no-print-directory check-hostile
	@tools/stage reports    $(MAKE) --no-print-directory check-reports
	@tools/stage portable   $(MAKE) --no-print-directory check-portable
	@tools/stage valgrind   $(MAKE) --no-print-directory check-valgrind
	@tools/stage html       $(MAKE) -s --no-print-directory -j2 html
	@tools/stage pdf        $(MAKE) -s --no-print-directory check-pdf
	@tools/stage browser    tools/check-site.sh $(B)/html $(B)/stamps/site
	@echo "make check: all stages passed in $$(awk -v s=$$(cat $(B)/.check-start) -v e=$$(date +%s.%N) 'BEGIN { printf "%.1f", e - s }') s"

clean:
	rm -rf build

-include $(wildcard $(B)/obj/*.d $(B)/san/*.d $(B)/evidence/*.d $(B)/san/evidence/*.d $(B)/dep/*.d $(B)/tests/*.d $(B)/tests/san/*.d)
