/* es-finetune's rewards (internal to the CLI): what a population member scores on the
 * iteration's batch, with the member's parameters in the model.
 *
 *   nll   minus the mean NLL of the targets (unbounded: compare with finetune's loss)
 *   acc   token accuracy + 0.1 exp(-mean NLL), teacher-forced over the targets (bounded, dense)
 *   rule  on greedy generations from each example's prompt (the tokens before its first
 *         target), at most max_new tokens: the unigram F1 of the generated words against the
 *         targets' words, + 0.1 when the generation starts with --format-prefix and ends with
 *         --format-suffix (when either is given) */
#ifndef FORGIA_TOOLS_ES_REWARD_H
#define FORGIA_TOOLS_ES_REWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/lm.h"
#include "ft_data.h"

typedef enum es_reward_kind { ES_REWARD_NLL = 0, ES_REWARD_ACC = 1, ES_REWARD_RULE = 2 } es_reward_kind;

typedef struct es_ctx {
  fg_lm *lm;
  const ft_data *data;
  const size_t *batch;  /* the iteration's examples */
  size_t n_batch;
  es_reward_kind kind;
  fg_lm_cache *cache;   /* acc and rule: one sequence of the longest example (+ max_new) */
  size_t max_new;       /* rule */
  const char *prefix, *suffix;  /* rule; NULL: none */
} es_ctx;

bool es_reward_parse(const char *s, es_reward_kind *out);
const char *es_reward_name(es_reward_kind k);

/* The unigram F1 of two texts' whitespace-separated words (multiset overlap); 1 when both have
 * none, 0 when only one has none. */
double es_unigram_f1(const char *got, const char *want);

/* An fg_es_eval_fn: the member's reward on the batch, user an es_ctx. */
fg_status es_member_reward(void *user, uint64_t member, float *reward);

#endif
