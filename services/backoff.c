/* SPDX-License-Identifier: BSD-3-Clause */
#include "services/backoff.h"

_Atomic uint32_t grain_backoff_nap_max_ns = GRAIN_BACKOFF_NAP_NS;
