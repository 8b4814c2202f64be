/* forgia finetune's training run (internal to the CLI): LoRA adapters on a frozen model or
 * every weight of a dense one, the data cursor, an optimizer with its schedule, checkpoints and metrics. */
#ifndef FORGIA_TOOLS_FT_RUN_H
#define FORGIA_TOOLS_FT_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "forgia/ckpt_dir.h"
#include "forgia/comm.h"
#include "forgia/lm_adapters.h"
#include "forgia/lm_full.h"
#include "forgia/lr_schedule.h"
#include "forgia/trainer_state.h"
#include "ft_data.h"

typedef struct ft_opts {
  fg_lm_adapters_config ad;     /* targets, rank, alpha, dropout, seed, mode */
  bool full;                    /* every weight (forgia/lm_full.h) rather than adapters */
  uint32_t frozen;              /* --full: FG_LM_FULL_FREEZE bits of the kinds left out */
  float weight_decay;           /* < 0: the optimizer's default; --full: matrices only */
  fg_optim_kind optim;
  float lr, clip;               /* clip 0: none */
  fg_lr_schedule schedule;      /* total_steps set by the run */
  uint64_t steps;               /* optimizer steps to reach */
  uint64_t batch, accum;        /* sequences per micro-batch, micro-batches per step */
  bool shuffle;
  uint64_t data_seed;
  const char *save_dir, *resume_dir;
  uint64_t save_every;
  const ft_data *eval;          /* NULL: none */
  uint64_t eval_every;
  const char *metrics;          /* JSONL path, NULL: none */
  fg_comm *comm;                /* the ranks the step's sequences are shared among (rank 0 writes) */
  bool quiet;
} ft_opts;

typedef struct ft_result {
  uint64_t first_step, step;
  double first_loss, last_loss; /* mean NLL of the first and the last step run (NaN: none) */
  double tokens_per_s;
  bool interrupted;
} ft_result;

/* A checkpoint directory of adapters: adapters.safetensors (layers.<l>.<target>.lora_a/b),
 * optimizer.fucina (optimizer NULL: none, as ES has none) and ts as trainer_state.json. */
fg_status ft_ckpt_save(const fg_lm_adapters *ad, const char *dir, const void *optimizer, size_t optimizer_len,
                       const fg_trainer_state *ts);

/* A checkpoint directory of trained weights (--full, es-finetune --mode full): model.safetensors
 * holds ps under their names and dtypes; optimizer as ft_ckpt_save's. */
fg_status ft_weights_save(fg_tensor *const *ps, size_t n, const char *dir, const void *optimizer, size_t optimizer_len,
                          const fg_trainer_state *ts);
/* Such a checkpoint's weights into ps (strict: every name, shape and dtype), all checked before
 * any is written. */
fg_status ft_weights_load(fg_tensor *const *ps, size_t n, const fg_ckpt_dir *d);

/* The run; 0, or 1 after reporting as cmd. */
int ft_run(const char *cmd, fg_lm *lm, const ft_data *data, const ft_opts *o, ft_result *r);

#endif
