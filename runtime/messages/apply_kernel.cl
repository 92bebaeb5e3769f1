/* SPDX-License-Identifier: BSD-3-Clause */
/* The apply kernel of a rank that registered no program of handlers: every
 * program has it (grain/device/runtime_kernels.h), this one has nothing else. */
#include "grain/device.h"
