/* bpe_rank.h -- private to the library: the check that a merge table is a
   ranking, which spelling (bpe.c) and the tokenizer (tokenize.c) share. */
#ifndef LLM_BPE_RANK_H
#define LLM_BPE_RANK_H

#include "llm/tokenizer.h"

/* LLM_OK when bpe is a table (not NULL, merges present when it has any)
   whose merge of rank r joins IDs below 256 + r.
   Errors: LLM_ERR_ARGUMENT under stage, naming the first merge that is
   out of place. */
llm_status llm_bpe_ranking(const llm_bpe *bpe, const char *stage, llm_error *err);

#endif
