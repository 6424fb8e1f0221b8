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
# a count and its noun, which tools/book.lua inflects in the edition's
# grammar: forms "one|other" in English, "one|few|many" in Russian
function count_of(n, forms) { return sprintf("[%d]{.count noun=\"%s\"}", n, forms) }
# a partition's name in the edition
function part_name(p) {
  if (lang != "ru") return p
  return p == "train" ? "обучающая" : p == "validation" ? "валидационная" : "тестовая"
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
    printf "Это весь текст, по которому книга строит свой токенизатор, оценивает биграммную модель и обучает первые нейросетевые модели: %s одного маленького портового города, каждая написана дважды — по-английски и по-русски, всего %s, %s в UTF-8. Обе версии сцены рассказывают одно и то же, каждая — так, как это рассказывает её язык, и вместе образуют одну *группу происхождения*: они всегда попадают в одну выборку. Разбиение `%s` зафиксировано до того, как из корпуса что-либо выучено, и называет корпус по контрольной сумме `%s` (FNV-1a, 64 бита, над точными байтами файла).\n\n",
           count_of(ngroups, "сцена|сцены|сцен"), count_of(ndocs, "документ|документа|документов"),
           count_of(bytes, "байт|байта|байт"), split_name, checksum
  else
    printf "This is all the text from which the book learns its tokenizer, its bigram model and its first neural models: %s of one small harbour town, each written twice, in English and in Russian, %s and %s of UTF-8 in all. The two versions of a scene tell the same events, each as its own language tells them, and form one *provenance group*: they always land in the same partition. The split `%s` was fixed before anything was learned from the corpus, and it names the corpus by its checksum `%s` (64-bit FNV-1a over the file's exact bytes).\n\n",
           count_of(ngroups, "scene|scenes"), count_of(ndocs, "document|documents"),
           count_of(bytes, "byte|bytes"), split_name, checksum
  printf "| %s | %s | %s |\n|:---|---:|---:|\n", say("partition", "выборка"), say("scenes", "сцены"), say("documents", "документы")
  nparts = split("train validation test", parts, " ")
  for (k = 1; k <= nparts; k++)
    printf "| %s | %d | %d |\n", part_name(parts[k]), count[parts[k]], 2 * count[parts[k]]
  printf "\n"
  printf ": %s\n\n", say("The split of the corpus into partitions.", "Разбиение корпуса на выборки.")
  printf "%s", say("The scenes: ", "Сцены: ")
  for (g = 1; g <= ngroups; g++)
    printf "%s[%s](#scene-%s)", (g > 1 ? " · " : ""), substr(order[g], 1, 2), order[g]
  printf ".\n\n"
  for (g = 1; g <= ngroups; g++) {
    grp = order[g]
    p = partition[grp]
    pname = part_name(p) say("", " выборка")
    printf "## %s %s · `%s` {#scene-%s .unnumbered .unlisted}\n\n*%s*\n\n", say("Scene", "Сцена"),
           substr(grp, 1, 2), grp, grp, pname
    printf "[%s]{.corpus-lang}\n\n::: {.corpus-doc text-lang=en}\n%s:::\n\n",
           say("English", "По-английски"), text[grp, "en"]
    printf "[%s]{.corpus-lang}\n\n::: {.corpus-doc text-lang=ru}\n%s:::\n\n",
           say("Russian", "По-русски"), text[grp, "ru"]
  }
}
