/* A set's state as Fucina's OptimizerSet writes it (FZO3, the members' frames in order),
 * loaded all or nothing across members: every member frame is checked before the first is
 * committed. */
#include <stdlib.h>
#include <string.h>

#include "forgia/optim_frame.h"
#include "forgia/optimset.h"
#include "training/optim_internal.h"

fg_status fg_optimset_save_state(fg_optimset *set, uint8_t **out, size_t *out_len) {
  if (!set || !out || !out_len) return fg_fail(FG_ERR_INVALID_ARG, "fg_optimset_save_state: NULL argument");
  *out = NULL;
  *out_len = 0;
  const size_t n = fg_optimset_count(set);
  fg_oframe f;
  memset(&f, 0, sizeof f);
  f.kind = FG_OFRAME_KIND_SET;
  f.version = 3;
  f.members = calloc(n ? n : 1, sizeof *f.members);
  if (!f.members) return fg_fail(FG_ERR_NOMEM, "optimizer set state: out of memory");
  f.n_members = n;
  fg_status s = FG_OK;
  for (size_t k = 0; k < n && s == FG_OK; k++) {
    s = fg_optim_state_fill(fg_optimset_member(set, k), &f.members[k]);
    if (s) s = fg_fail_prefix(s, "optimizer set member %zu: ", k);
  }
  if (s == FG_OK) s = fg_optim_frame_serialize(&f, out, out_len);
  fg_optim_state_clear(&f); /* frees the members' fills and the member array */
  return s;
}

fg_status fg_optimset_load_state(fg_optimset *set, const uint8_t *data, size_t len) {
  if (!set || (len && !data)) return fg_fail(FG_ERR_INVALID_ARG, "fg_optimset_load_state: NULL argument");
  const size_t n = fg_optimset_count(set);
  fg_oframe *f = NULL;
  fg_status s = fg_optim_frame_parse(data, len, &f);
  if (s == FG_OK) {
    fg_oframe want;
    memset(&want, 0, sizeof want);
    want.kind = FG_OFRAME_KIND_SET;
    want.n_members = n;
    s = fg_optim_frame_check_header(f, &want);
  }
  for (size_t k = 0; k < n && s == FG_OK; k++) {
    fg_optim *m = fg_optimset_member(set, k);
    s = fg_optim_state_check(m, &f->members[k]);
    if (s) s = fg_fail_prefix(s, "optimizer set member %zu (%s): ", k, fg_optim_kind_name(m->c.kind));
  }
  /* Past this point only a device failure can stop a commit. */
  for (size_t k = 0; k < n && s == FG_OK; k++) {
    s = fg_optim_state_commit(fg_optimset_member(set, k), &f->members[k]);
    if (s) s = fg_fail_prefix(s, "optimizer set member %zu: ", k);
  }
  fg_optim_frame_free(f);
  return s ? fg_fail_prefix(s, "optimizer set state: ") : FG_OK;
}
