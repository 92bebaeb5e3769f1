/* SPDX-License-Identifier: BSD-3-Clause */
#include "backends/gpu/cuda_blas.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_api.h>

#include "backends/gpu/cuda_libs.h"
#include "services/log.h"

/* The soname of the cuBLAS whose headers this was built with. */
#define CUBLAS_STR_(x) #x
#define CUBLAS_STR(x) CUBLAS_STR_(x)
#define CUBLAS_SONAME "libcublas.so." CUBLAS_STR(CUBLAS_VER_MAJOR)

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*version_fn)(cublasHandle_t, int *);
typedef cublasStatus_t (*stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*dgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                   const double *, const double *, int, const double *, int, const double *,
                                   double *, int);
typedef cublasStatus_t (*sgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                   const float *, const float *, int, const float *, int, const float *, float *,
                                   int);

struct grain_cublas {
    void *lib;
    cublasHandle_t handle;
    cudaStream_t stream; /* the handle's */
    destroy_fn destroy;
    stream_fn set_stream;
    dgemm_fn dgemm;
    sgemm_fn sgemm;
};

grain_cublas_t *grain_cublas_open(char *name, size_t size)
{
    grain_cublas_t *h = calloc(1, sizeof *h);
    char why[768] = "no memory";
    if (h == NULL || (h->lib = grain_cuda_lib_open(CUBLAS_SONAME, why, sizeof why)) == NULL) {
        name[0] = '\0';
        grain_info("cuda: no cuBLAS (%s): gemm tiles by grain's kernels", why);
        free(h);
        return NULL;
    }
    create_fn create = (create_fn)dlsym(h->lib, "cublasCreate_v2");
    version_fn version = (version_fn)dlsym(h->lib, "cublasGetVersion_v2");
    h->set_stream = (stream_fn)dlsym(h->lib, "cublasSetStream_v2");
    h->destroy = (destroy_fn)dlsym(h->lib, "cublasDestroy_v2");
    h->dgemm = (dgemm_fn)dlsym(h->lib, "cublasDgemm_v2");
    h->sgemm = (sgemm_fn)dlsym(h->lib, "cublasSgemm_v2");
    int v = 0;
    cublasStatus_t st = CUBLAS_STATUS_NOT_INITIALIZED;
    if (create != NULL && version != NULL && h->set_stream != NULL && h->destroy != NULL && h->dgemm != NULL &&
        h->sgemm != NULL && (st = create(&h->handle)) == CUBLAS_STATUS_SUCCESS)
        st = version(h->handle, &v);
    if (st != CUBLAS_STATUS_SUCCESS) {
        grain_info("cuda: %s could not start (status %d): gemm tiles by grain's kernels", CUBLAS_SONAME, (int)st);
        grain_cublas_close(h);
        name[0] = '\0';
        return NULL;
    }
    snprintf(name, size, "cuBLAS %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    return h;
}

void grain_cublas_close(grain_cublas_t *h)
{
    if (h == NULL)
        return;
    if (h->handle != NULL)
        h->destroy(h->handle);
    dlclose(h->lib);
    free(h);
}

grain_status_t grain_cublas_gemm(grain_cublas_t *h, cudaStream_t stream, size_t es, int ta, int tb, size_t m,
                                 size_t n, size_t k, const void *alpha, const void *a, size_t lda, const void *b,
                                 size_t ldb, const void *beta, void *c, size_t ldc)
{
    /* cuBLAS counts in int: the tiled BLAS's tiles are far below. */
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX)
        return grain_fail(GRAIN_ERR_INVALID, "cuda: a %zu x %zu x %zu gemm tile (leading dimensions %zu, %zu, %zu) "
                          "is past cuBLAS's int dimensions", m, n, k, lda, ldb, ldc);
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    int im = (int)m, in = (int)n, ik = (int)k, ia = (int)lda, ib = (int)ldb, ic = (int)ldc;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    if (stream != h->stream && (st = h->set_stream(h->handle, stream)) == CUBLAS_STATUS_SUCCESS)
        h->stream = stream;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = es == 8 ? h->dgemm(h->handle, oa, ob, im, in, ik, alpha, a, ia, b, ib, beta, c, ic)
                     : h->sgemm(h->handle, oa, ob, im, in, ik, alpha, a, ia, b, ib, beta, c, ic);
    if (st != CUBLAS_STATUS_SUCCESS)
        return grain_fail(GRAIN_ERR_BACKEND, "cuda: cuBLAS %cgemm of %zu x %zu x %zu failed (status %d)",
                          es == 8 ? 'd' : 's', m, n, k, (int)st);
    return GRAIN_OK;
}
