/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA toolkit's libraries loaded on first use (backends/gpu/cuda_libs.h),
 * on a machine with the toolkit and no GPU: NVRTC loads and builds a kernel
 * to a CUBIN, nvJitLink loads, the toolkit's folder is where a library off
 * the loader's path is found.  Built a second time naming libraries that do
 * not exist (TEST_MISSING): the build fails with an error naming the
 * library and what to install, and a second call says the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/gpu/cuda_libs.h"

#if !defined(TEST_MISSING)

static void test_nvrtc_builds_a_kernel(void **state)
{
    const grain_nvrtc_t *rtc = grain_nvrtc();
    assert_non_null(rtc);
    assert_ptr_equal(grain_nvrtc(), rtc); /* loaded once */
    nvrtcProgram p;
    assert_int_equal(rtc->create(&p, "extern \"C\" __global__ void k(int *x) { x[threadIdx.x] = 1; }", "k.cu", 0,
                                 NULL, NULL),
                     NVRTC_SUCCESS);
    const char *options[] = {"--gpu-architecture=sm_90"};
    assert_int_equal(rtc->compile(p, 1, options), NVRTC_SUCCESS);
    size_t size = 0;
    assert_int_equal(rtc->code_size(p, &size), NVRTC_SUCCESS);
    assert_true(size > 0);
    char *cubin = malloc(size);
    assert_non_null(cubin);
    assert_int_equal(rtc->code(p, cubin), NVRTC_SUCCESS);
    assert_memory_equal(cubin, "\177ELF", 4);
    free(cubin);
    assert_int_equal(rtc->destroy(&p), NVRTC_SUCCESS);
    assert_string_equal(rtc->error_string(NVRTC_SUCCESS), "NVRTC_SUCCESS");
}

static void test_nvjitlink_loads(void **state)
{
#if defined(GRAIN_CUDA_DEVRT)
    char why[512] = "";
    const grain_nvjitlink_t *j = grain_nvjitlink(why, sizeof why);
    if (j == NULL)
        fail_msg("nvJitLink did not load: %s", why);
    nvJitLinkHandle link;
    const char *options[] = {"-arch=sm_90"};
    assert_int_equal(j->create(&link, 1, options), NVJITLINK_SUCCESS);
    assert_int_equal(j->destroy(&link), NVJITLINK_SUCCESS);
#else
    skip();
#endif
}

static void test_toolkit_folder(void **state)
{
    char why[512] = "";
    void *lib = grain_cuda_lib_open(GRAIN_NVRTC_SONAME, why, sizeof why);
    assert_non_null(lib);
    assert_null(grain_cuda_lib_open("libgrain-nothing.so.1", why, sizeof why));
    assert_non_null(strstr(why, "libgrain-nothing.so.1 is neither on the loader's path nor in " GRAIN_CUDA_LIB_DIR));
}

#else

static void test_missing_nvrtc_is_an_error(void **state)
{
    for (int call = 0; call < 2; call++) {
        assert_null(grain_nvrtc());
        const char *msg = grain_error_message(NULL);
        if (strstr(msg, "libgrain-no-nvrtc.so.1 is neither on the loader's path nor in /nonexistent") == NULL ||
            strstr(msg, "install the CUDA toolkit's NVRTC") == NULL)
            fail_msg("call %d: \"%s\" does not name the library and what to install", call, msg);
    }
}

#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
#if !defined(TEST_MISSING)
        cmocka_unit_test(test_nvrtc_builds_a_kernel),
        cmocka_unit_test(test_nvjitlink_loads),
        cmocka_unit_test(test_toolkit_folder),
#else
        cmocka_unit_test(test_missing_nvrtc_is_an_error),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
