/* forgia: checkpoint I/O and training state. This header includes every module. */
#ifndef FORGIA_FORGIA_H
#define FORGIA_FORGIA_H

#include "forgia/api.h"
#include "forgia/status.h"
#include "forgia/version.h"
#include "forgia/dtype.h"
#include "forgia/mapping.h"
#include "forgia/topology.h"
#include "forgia/device.h"
#include "forgia/gguf.h"
#include "forgia/safetensors.h"
#include "forgia/quant.h"
#include "forgia/export.h"
#include "forgia/load.h"

#endif
