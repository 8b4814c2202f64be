/* forgia: checkpoint I/O and training state. This header includes every module. */
#ifndef FORGIA_FORGIA_H
#define FORGIA_FORGIA_H

#include "forgia/status.h"
#include "forgia/dtype.h"
#include "forgia/mapping.h"
#include "forgia/safetensors.h"
#include "forgia/device.h"
#include "forgia/topology.h"
#include "forgia/version.h"

#endif
