/* The parameter registry: a model's named tensors, trainable and frozen, built from an
 * explicit table (C has no reflection), and the bridge to optimizers and state dicts.
 *
 *   fg_registry_entry table[] = {
 *     {"layers.0.weight", w, true}, {"layers.0.bias", b, true},
 *     {"embed.positions", pos, false},            // frozen; i64 allowed when frozen
 *   };
 *   fg_registry *reg;
 *   fg_registry_create(table, 3, &reg);
 *   fg_registry_add_to_optim(reg, opt);           // trainable entries, slots named as above
 *   fg_registry_save(reg, "run/model.safetensors");
 *   fg_registry_load_file(reg, "run/model.safetensors", NULL, NULL);   // strict
 *
 * Entries: f32, f16 or bf16 (trainable or frozen) or i64 (frozen only); names non-empty,
 * UTF-8, unique and not "__metadata__" (the state-dict rules, forgia/state_dict.h); a tensor
 * appears once. Tensors are borrowed (they must outlive the registry) and may live on any
 * device; the state dict is made of host copies.
 *
 * Loading validates the whole stream against every entry first (fg_state_dict_load's
 * rules, in host staging memory), then uploads, so a failed load changes no tensor byte.
 * A 16-bit trainable parameter's optimizer keeps an f32 master: load the optimizer's state
 * after the weights (its master record, or a re-widening from the loaded values, wins).
 *
 * Thread safety: a registry is immutable after create; loads write its tensors and follow
 * the tensors' rules (one thread at a time). */
#ifndef FORGIA_REGISTRY_H
#define FORGIA_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/optim.h"
#include "forgia/state_dict.h"
#include "forgia/status.h"
#include "forgia/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_registry_entry {
  const char *name;  /* the state-dict name; NULL takes the tensor's own (non-empty) name */
  fg_tensor *tensor; /* borrowed */
  bool trainable;
} fg_registry_entry;

typedef struct fg_registry fg_registry;

/* Copies the table (names included). FG_ERR_DUPLICATE for a repeated name or tensor,
 * FG_ERR_TYPE for a trainable i64 or any other dtype, FG_ERR_INVALID_ARG for a bad name. */
FG_API fg_status fg_registry_create(const fg_registry_entry *table, size_t n, fg_registry **out);
FG_API void fg_registry_free(fg_registry *r); /* NULL-safe; the tensors stay the caller's */
FG_API size_t fg_registry_count(const fg_registry *r);
/* Entry i with its resolved name (borrowed), or NULL past the end. */
FG_API const fg_registry_entry *fg_registry_entry_at(const fg_registry *r, size_t i);
FG_API const fg_registry_entry *fg_registry_find(const fg_registry *r, const char *name);

/* Registers every trainable entry, in table order, with fg_optim_add under its state-dict
 * name. Everything is checked first (device, read-only, a tensor or name the optimizer
 * already holds in any of its name spaces), so a refused call registers nothing. */
FG_API fg_status fg_registry_add_to_optim(const fg_registry *r, fg_optim *o);

/* Host copies of the entries as a state dict (entries in table order; trainable_only: the
 * trainable entries alone, e.g. adapters). Free with fg_registry_snapshot_free. */
typedef struct fg_registry_snapshot {
  fg_state_dict_entry *entries;
  size_t n;
  uint8_t *data; /* the copies, owned */
} fg_registry_snapshot;
FG_API fg_status fg_registry_snapshot_take(const fg_registry *r, bool trainable_only, fg_registry_snapshot *out);
FG_API void fg_registry_snapshot_free(fg_registry_snapshot *s); /* NULL-safe */

/* The whole registry as one safetensors frame (fg_state_dict_serialize's bytes; free()). */
FG_API fg_status fg_registry_serialize(const fg_registry *r, uint8_t **out, size_t *out_len);
/* The same as a file, written atomically (model.safetensors of a checkpoint directory). */
FG_API fg_status fg_registry_save(const fg_registry *r, const char *path);

/* Loads a state-dict stream into the entries by name (opts: strictness and aliases, NULL
 * strict; loaded: NULL or count entries). Read-only tensors (file-mapping views) that the
 * stream would write are refused before any change (FG_ERR_STATE). */
FG_API fg_status fg_registry_load_bytes(const fg_registry *r, const void *bytes, size_t len, const char *source,
                                        const fg_state_dict_load_opts *opts, bool *loaded);
FG_API fg_status fg_registry_load_file(const fg_registry *r, const char *path, const fg_state_dict_load_opts *opts,
                                       bool *loaded);

#ifdef __cplusplus
}
#endif
#endif
