/* SPDX-License-Identifier: BSD-3-Clause */
#include "grain/grain.h"
#include "grain/version.h"

const char *grain_version(void)
{
    return GRAIN_VERSION_STRING;
}

const char *grain_strerror(grain_status_t status)
{
    switch (status) {
    case GRAIN_OK: return "success";
    case GRAIN_ERR_INVALID: return "invalid argument";
    case GRAIN_ERR_NO_MEMORY: return "out of memory";
    case GRAIN_ERR_CONFIG: return "impossible configuration";
    case GRAIN_ERR_NO_BACKEND: return "backend not built in";
    case GRAIN_ERR_NO_DEVICE: return "no usable device";
    case GRAIN_ERR_BACKEND: return "GPU API call failed";
    case GRAIN_ERR_BUILD: return "kernel build failed";
    case GRAIN_ERR_TRANSPORT: return "transport failed";
    case GRAIN_ERR_BAD_PE: return "message to a PE that does not exist";
    case GRAIN_ERR_BAD_OFFSET: return "message outside the symmetric heap";
    case GRAIN_ERR_BAD_HANDLER: return "active message to an unregistered handler";
    case GRAIN_ERR_BAD_MESSAGE: return "malformed message buffer";
    case GRAIN_ERR_UNSUPPORTED: return "device lacks a required capability";
    case GRAIN_ERR_STATE: return "call not allowed in this state";
    case GRAIN_ERR_PEER: return "a rank failed";
    }
    return "unknown status";
}
