/* The dispatch every kernel family shares (device/family_table.h). */
#include "device/backend.h"
#include "device/scratch.h"

static const char *const fg_family_names[FG_FAMILY_COUNT] = {
#define FG_FAMILY_NAME_(a, name, call) [FG_FAMILY_##name] = #name,
    FG_FAMILY_TABLE(FG_FAMILY_NAME_, )
#undef FG_FAMILY_NAME_
};

const char *fg_family_name(fg_family_id id) { return (unsigned)id < FG_FAMILY_COUNT ? fg_family_names[id] : NULL; }

fg_status fg_family_run(fg_device *dev, fg_family_id id, const void *call, fg_stream *s, const char *what) {
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  if (s && s->dev != dev)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: the stream belongs to %s, not %s", what, s->dev->spec, dev->spec);
  const fg_family_fn fn = (unsigned)id < FG_FAMILY_COUNT && dev->be->families ? dev->be->families[id] : NULL;
  if (!fn) return fg_fail(FG_ERR_UNSUPPORTED, "%s: the %s backend has no %s kernels", what, dev->spec,
                          fg_family_name(id) ? fg_family_name(id) : "such");
  fg_stream *run = fg_stream_begin(dev, s);
  return fg_stream_end(dev, s, fn(dev, call, run));
}
