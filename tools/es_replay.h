/* `forgia es replay`: an ES trajectory reproduced from its recorded rewards. The config
 * names the trainer's settings with Fucina's field names and enum names; the parameters
 * come from a safetensors file, registered in the config's `params` order; each recorded
 * reward vector is one fg_es_update. Since the noise is a function of the seed and the
 * iteration, the rewards are all a run needs to be replayed bit for bit. */
#ifndef FORGIA_TOOLS_ES_REPLAY_H
#define FORGIA_TOOLS_ES_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/forgia.h"

typedef struct es_replay_config {
  fg_es_config c;
  char **params; /* tensor names of P in registration order (owned) */
  size_t nparams;
} es_replay_config;

/* CONFIG.json's text: an object with any of sigma, alpha (absent: sigma / 2), population,
 * antithetic, noise (iid|correlated), restore_mode (regenerate|snapshot), reward_norm
 * (z_score|centered_ranks|none), anchor_decay (none|l1|l2), anchor_lambda, cache_streams,
 * ternary_flip_rate, ternary_update_fraction, ternary_update_decay, seed (an integer read
 * exactly from its digits, or a decimal string) and params (required: a non-empty list of
 * names); absent fields take fg_es_defaults(). false with why naming the field and what was
 * expected: an unknown field, a wrong type, an unknown enum name, a config that
 * fg_es_config_check refuses. */
bool es_replay_config_parse(const char *text, es_replay_config *out, char *why, size_t why_len);
void es_replay_config_free(es_replay_config *c);

/* R.json's text: an array of iterations, each an array of exactly population numbers, each
 * a finite f32. *out: iterations x population floats (malloc'd; NULL when there are none).
 * Errors name source, the iteration and the entry. */
fg_status es_replay_rewards_parse(const char *text, const char *source, uint64_t population, float **out,
                                  size_t *iterations);

/* Loads params_path's tensors named by c->params onto dev, registers them in that order,
 * captures the anchor when anchor decay is on, applies the iterations x population rewards
 * (an update failing at iteration k names it) and writes the parameters, under their names
 * and in their dtypes, to out_path (atomically). in_place: before each update every member is
 * perturbed and restored in member order, as a run that evaluated its members in place did:
 * a regenerating restore leaves its (x + t) - t rounding in the parameters, which the rewards
 * do not record. Without it the run is taken to have evaluated members on replicas
 * (fg_es_materialize) or with snapshot restores, where the parameters see only the updates. */
fg_status es_replay_run(fg_device *dev, const es_replay_config *c, const char *params_path, const float *rewards,
                        size_t iterations, bool in_place, const char *rewards_source, const char *out_path);

#endif
