/* forgia: checkpoint I/O and training state. This header includes every module.
 *
 * Naming, the same in every module:
 *   fg_<module>_<verb>        functions; types lowercase, enum values FG_<PREFIX>_<NAME>, and
 *                             no two enums share a prefix (FG_LOAD_DTYPE_*, FG_LOAD_FLAG_*).
 *   *_open / *_close          things opened from a path or a device name (files, checkpoints,
 *                             devices); *_close is NULL-safe.
 *   *_create / *_free         things built in memory (writers, plans, rings, streams, events,
 *                             models); *_free is NULL-safe.
 *   *_open_<source>, *_from_<source>
 *                             more constructors of the same thing from another source (bytes,
 *                             a mapping, a parsed file, a vocabulary); same destructor.
 *   *_retain / *_release      reference counting (mappings).
 *   *_find                    returns a borrowed pointer, or NULL when absent.
 *   *_get                     returns an fg_status (FG_ERR_NOT_FOUND with a message when absent)
 *                             and the result through an out parameter.
 *   *_index                   returns an index, or -1 when absent.
 *   *_evict                   a paging hint that drops pages; never frees memory.
 * Counts and indices are size_t; ranks (ndim) are int; shapes are uint64_t, row-major,
 * outermost first (GGUF's innermost-first order appears only in fields named ne).
 * Callbacks take the information first and the caller's user pointer last.
 * Every fallible function returns fg_status and leaves fg_last_error() set on failure; a
 * failed call leaves nothing allocated, half-written or half-applied.
 *
 * Thread safety is stated at the top of each module's header: opened files, checkpoints,
 * plans and loaded models are immutable and may be read from many threads; writers are
 * single-threaded; fg_last_error() is thread-local. */
#ifndef FORGIA_FORGIA_H
#define FORGIA_FORGIA_H

#include "forgia/api.h"
#include "forgia/status.h"
#include "forgia/cancel.h"
#include "forgia/output.h"
#include "forgia/version.h"
#include "forgia/dtype.h"
#include "forgia/mapping.h"
#include "forgia/topology.h"
#include "forgia/device.h"
#include "forgia/tensor.h"
#include "forgia/ops.h"
#include "forgia/rng.h"
#include "forgia/reduce.h"
#include "forgia/gemm.h"
#include "forgia/apollo.h"
#include "forgia/es_trits.h"
#include "forgia/rmsnorm.h"
#include "forgia/rope.h"
#include "forgia/attention.h"
#include "forgia/embed.h"
#include "forgia/linear.h"
#include "forgia/softmax.h"
#include "forgia/gguf.h"
#include "forgia/gguf_stream.h"
#include "forgia/tokenizer.h"
#include "forgia/chat.h"
#include "forgia/jinja.h"
#include "forgia/safetensors.h"
#include "forgia/ckpt.h"
#include "forgia/state_dict.h"
#include "forgia/trainer_state.h"
#include "forgia/ckpt_dir.h"
#include "forgia/optim_frame.h"
#include "forgia/quant.h"
#include "forgia/quant_weighted.h"
#include "forgia/imatrix.h"
#include "forgia/export.h"
#include "forgia/ptqtp.h"
#include "forgia/export_ptqtp.h"
#include "forgia/export_merge.h"
#include "forgia/load.h"
#include "forgia/tensor_ckpt.h"
#include "forgia/optim.h"
#include "forgia/optimset.h"
#include "forgia/muon.h"
#include "forgia/registry.h"
#include "forgia/lora.h"
#include "forgia/lr_schedule.h"
#include "forgia/comm.h"
#include "forgia/es.h"
#include "forgia/lm.h"
#include "forgia/lm_adapters.h"
#include "forgia/lm_full.h"
#include "forgia/lm_grad.h"
#include "forgia/lm_weights.h"
#include "forgia/sample.h"

#endif
