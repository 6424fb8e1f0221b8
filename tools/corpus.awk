# corpus.awk -- the book's corpus as a page of one edition (pandoc Markdown):
# every scene, in the corpus's order, with its partition and both of its
# documents, each marked with the language it is written in.
#
# Usage: awk -f tools/corpus.awk -v lang=en corpus/splits.txt corpus/corpus.txt
# (corpus/README.md gives both files' formats). The counts and the checksum
# the page quotes are the files' own: scenes, documents and bytes are
# counted here, the checksum is the one the split names.

# A line of the corpus as Markdown text that pandoc shows as it is: every
# ASCII punctuation character escaped, so that none is markup and no quote,
# dash or dots become typographic ones.
function md(s) {
  gsub(/[][!"#$%&'()*+,.\/:;<=>?@\\^_`{|}~-]/, "\\\\&", s)
  return s
}
function say(en, ru) { return lang == "ru" ? ru : en }
# a Russian noun after the number n: one (1, 21, ...), few (2-4, 22-24, ...)
# or many (0, 5-20, 25-30, ...)
function ru_noun(n, one, few, many) {
  if (n % 10 == 1 && n % 100 != 11) return one
  if (n % 10 >= 2 && n % 10 <= 4 && (n % 100 < 12 || n % 100 > 14)) return few
  return many
}

BEGIN { if (lang != "en" && lang != "ru") { print "corpus.awk: -v lang=en or ru" > "/dev/stderr"; exit 1 } }

FNR == NR {                           # corpus/splits.txt
  if (/^#/ || /^$/) next
  if ($1 == "split") split_name = $2
  else if ($1 == "corpus") checksum = $2
  else part[$1] = $2
  next
}
/^@doc / {
  id = $2; dlang = $3; group = $4
  if (!(group in scene_of)) { order[++ngroups] = group; scene_of[group] = ngroups }
  ndocs++
  text[group, dlang] = ""
  if (!(id in part)) { printf "corpus.awk: %s is not in the split\n", id > "/dev/stderr"; bad = 1; exit 1 }
  partition[group] = part[id]
  inside = 1
  next
}
/^@end$/ { inside = 0; next }
inside { text[group, dlang] = text[group, dlang] ($0 == "" ? "\n" : md($0) "\n"); next }
END {
  if (bad) exit 1
  bytes = 0
  # the file's bytes, counted exactly as read (awk's length counts characters)
  cmd = "wc -c < \"" FILENAME "\""
  cmd | getline bytes
  close(cmd)
  bytes += 0
  for (g = 1; g <= ngroups; g++) count[partition[order[g]]]++
  printf "# %s {#corpus .unnumbered}\n\n", say("The book's corpus", "Корпус книги")
  if (lang == "ru")
    printf "Это весь текст, по которому книга строит свой токенизатор, оценивает биграммную модель и обучает первые нейросетевые модели: %d %s одного маленького портового города, каждая написана дважды — по-английски и по-русски, всего %d %s, %d %s в UTF-8. Обе версии сцены рассказывают одно и то же, каждая — так, как это рассказывает её язык, и вместе образуют одну *группу происхождения*: они всегда попадают в одну выборку. Разбиение `%s` зафиксировано до того, как из корпуса что-либо выучено, и называет корпус по контрольной сумме `%s` (FNV-1a, 64 бита, над точными байтами файла).\n\n",
           ngroups, ru_noun(ngroups, "сцена", "сцены", "сцен"), ndocs,
           ru_noun(ndocs, "документ", "документа", "документов"), bytes,
           ru_noun(bytes, "байт", "байта", "байт"), split_name, checksum
  else
    printf "This is all the text from which the book learns its tokenizer, its bigram model and its first neural models: %d scenes of one small harbour town, each written twice, in English and in Russian, %d documents and %d bytes of UTF-8 in all. The two versions of a scene tell the same events, each as its own language tells them, and form one *provenance group*: they always land in the same partition. The split `%s` was fixed before anything was learned from the corpus, and it names the corpus by its checksum `%s` (64-bit FNV-1a over the file's exact bytes).\n\n",
           ngroups, ndocs, bytes, split_name, checksum
  printf "| %s | %s | %s |\n|:---|---:|---:|\n", say("partition", "выборка"), say("scenes", "сцены"), say("documents", "документы")
  printf "| %s | %d | %d |\n", say("train", "обучающая"), count["train"], 2 * count["train"]
  printf "| %s | %d | %d |\n", say("validation", "валидационная"), count["validation"], 2 * count["validation"]
  printf "| %s | %d | %d |\n\n", say("test", "тестовая"), count["test"], 2 * count["test"]
  printf ": %s\n\n", say("The split of the corpus into partitions.", "Разбиение корпуса на выборки.")
  printf "%s", say("The scenes: ", "Сцены: ")
  for (g = 1; g <= ngroups; g++)
    printf "%s[%s](#scene-%s)", (g > 1 ? " · " : ""), substr(order[g], 1, 2), order[g]
  printf ".\n\n"
  for (g = 1; g <= ngroups; g++) {
    grp = order[g]
    p = partition[grp]
    pname = lang == "ru" ? (p == "train" ? "обучающая выборка" : p == "validation" ? "валидационная выборка" : "тестовая выборка") : p
    printf "## %s %s · `%s` {#scene-%s .unnumbered .unlisted}\n\n*%s*\n\n", say("Scene", "Сцена"),
           substr(grp, 1, 2), grp, grp, pname
    printf "[%s]{.corpus-lang}\n\n::: {.corpus-doc text-lang=en}\n%s:::\n\n",
           say("English", "По-английски"), text[grp, "en"]
    printf "[%s]{.corpus-lang}\n\n::: {.corpus-doc text-lang=ru}\n%s:::\n\n",
           say("Russian", "По-русски"), text[grp, "ru"]
  }
}
