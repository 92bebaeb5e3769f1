/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA toolkit's libraries loaded on first use (cuda_libs.h). */
#include "backends/gpu/cuda_libs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "services/log.h"

void *grain_cuda_lib_open(const char *soname, char *why, size_t size)
{
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", GRAIN_CUDA_LIB_DIR, soname);
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (lib == NULL)
        snprintf(why, size, "%s is neither on the loader's path nor in %s (%s)", soname, GRAIN_CUDA_LIB_DIR,
                 dlerror());
    return lib;
}

/* A function of a library's table: its name and where its pointer goes. */
typedef struct lib_fn {
    const char *name;
    size_t at;
} lib_fn_t;

#define LIB_FN(type, field, name) {name, offsetof(type, field)}

/* Loads `soname` and fills `table`'s n function pointers; 0 with why in
 * `why` when it is missing or lacks one (older than the build's toolkit). */
static int load_table(const char *soname, const lib_fn_t *fns, size_t n, void *table, char *why, size_t size)
{
    void *lib = grain_cuda_lib_open(soname, why, size);
    if (lib == NULL)
        return 0;
    for (size_t i = 0; i < n; i++) {
        void *f = dlsym(lib, fns[i].name);
        if (f == NULL) {
            snprintf(why, size, "%s has no %s: it is older than the toolkit grain was built with", soname,
                     fns[i].name);
            dlclose(lib);
            return 0;
        }
        memcpy((char *)table + fns[i].at, &f, sizeof f); /* POSIX: a function's address fits a void * */
    }
    return 1;
}

/* A library loaded by the first caller that needs it; every later caller
 * gets the same answer. */
typedef struct lazy_lib {
    pthread_mutex_t lock;
    int tried, loaded;
    const char *soname;
    const lib_fn_t *fns;
    size_t n;
    void *table;
    char why[768];
} lazy_lib_t;

static int lazy_load(lazy_lib_t *l)
{
    pthread_mutex_lock(&l->lock);
    if (!l->tried) {
        l->tried = 1;
        l->loaded = load_table(l->soname, l->fns, l->n, l->table, l->why, sizeof l->why);
    }
    int loaded = l->loaded;
    pthread_mutex_unlock(&l->lock);
    return loaded;
}

#define LAZY_LIB(soname, fns, table) \
    {PTHREAD_MUTEX_INITIALIZER, 0, 0, soname, fns, sizeof fns / sizeof fns[0], &table, ""}

static const lib_fn_t nvrtc_fns[] = {
    LIB_FN(grain_nvrtc_t, create, "nvrtcCreateProgram"),
    LIB_FN(grain_nvrtc_t, compile, "nvrtcCompileProgram"),
    LIB_FN(grain_nvrtc_t, log_size, "nvrtcGetProgramLogSize"),
    LIB_FN(grain_nvrtc_t, log, "nvrtcGetProgramLog"),
    LIB_FN(grain_nvrtc_t, code_size, "nvrtcGetCUBINSize"),
    LIB_FN(grain_nvrtc_t, code, "nvrtcGetCUBIN"),
    LIB_FN(grain_nvrtc_t, destroy, "nvrtcDestroyProgram"),
    LIB_FN(grain_nvrtc_t, error_string, "nvrtcGetErrorString"),
};
static grain_nvrtc_t nvrtc;
static lazy_lib_t nvrtc_lib = LAZY_LIB(GRAIN_NVRTC_SONAME, nvrtc_fns, nvrtc);

const grain_nvrtc_t *grain_nvrtc(void)
{
    if (lazy_load(&nvrtc_lib))
        return &nvrtc;
    grain_fail(GRAIN_ERR_NO_BACKEND, "cuda: programs are built by NVRTC, but %s; install the CUDA toolkit's NVRTC "
               "(cuda-nvrtc) or put its folder on LD_LIBRARY_PATH", nvrtc_lib.why);
    return NULL;
}

#if defined(GRAIN_CUDA_DEVRT)

static const lib_fn_t jit_fns[] = {
    LIB_FN(grain_nvjitlink_t, create, "nvJitLinkCreate"),
    LIB_FN(grain_nvjitlink_t, add_data, "nvJitLinkAddData"),
    LIB_FN(grain_nvjitlink_t, add_file, "nvJitLinkAddFile"),
    LIB_FN(grain_nvjitlink_t, complete, "nvJitLinkComplete"),
    LIB_FN(grain_nvjitlink_t, cubin_size, "nvJitLinkGetLinkedCubinSize"),
    LIB_FN(grain_nvjitlink_t, cubin, "nvJitLinkGetLinkedCubin"),
    LIB_FN(grain_nvjitlink_t, log_size, "nvJitLinkGetErrorLogSize"),
    LIB_FN(grain_nvjitlink_t, log, "nvJitLinkGetErrorLog"),
    LIB_FN(grain_nvjitlink_t, destroy, "nvJitLinkDestroy"),
};
static grain_nvjitlink_t jit;
static lazy_lib_t jit_lib = LAZY_LIB(GRAIN_NVJITLINK_SONAME, jit_fns, jit);

const grain_nvjitlink_t *grain_nvjitlink(char *why, size_t size)
{
    if (lazy_load(&jit_lib))
        return &jit;
    snprintf(why, size, "%s", jit_lib.why);
    return NULL;
}

#endif
