/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registering active-message handlers: host functions (grain_am_register) and
 * the device functions of a program (grain_am_register_program), which then
 * runs the apply kernels.  Both only while no kernel runs, since kernels read
 * the registered ids from the device context.
 */
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/messages/apply.h"
#include "services/log.h"

/* The device context's bitmaps follow the table. */
static grain_status_t publish(grain_t *g)
{
    for (unsigned w = 0; w < GRAIN_MAX_HANDLERS / 32; w++) {
        uint32_t host = 0;
        for (unsigned b = 0; b < 32; b++)
            host |= (uint32_t)(g->am.host[32 * w + b] != NULL) << b;
        g->dev_host.handlers[w] = host | g->am.device[w];
        g->dev_host.device_handlers[w] = g->am.device[w];
    }
    return grain_dev_upload(g);
}

grain_status_t grain_am_register(grain_t *g, unsigned id, grain_am_fn handler)
{
    if (g == NULL || handler == NULL || id >= GRAIN_MAX_HANDLERS)
        return grain_fail(GRAIN_ERR_INVALID, "grain_am_register: handler id %u must be below %u and the "
                          "handler non-NULL", id, GRAIN_MAX_HANDLERS);
    if (g->kernels_in_flight)
        return grain_fail(GRAIN_ERR_STATE, "grain_am_register while kernels run; register first");
    if (!g->host_handlers)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          "grain_am_register: host handler %u could not run everywhere: %s heap is device memory "
                          "that the other ranks of its node map (GRAIN_PEER=auto), which host threads cannot "
                          "address; register a device handler (GRAIN_AM_HANDLERS, grain_am_register_program) "
                          "or set GRAIN_PEER=off",
                          id, g->heap_host_access ? "another rank's" : "this rank's");
    g->am.host[id] = handler;
    return publish(g);
}

/* Which handler ids `program` defines: its grain_am_census kernel sets
 * their bits, and an id out of range in the word after them. */
static grain_status_t census(grain_t *g, grain_program_t *program, uint32_t *bits, size_t size)
{
    void *dev = NULL;
    grain_kernel_t *k = NULL;
    memset(bits, 0, size);
    grain_status_t st = grain_mem_alloc(g, size, &dev);
    if (st == GRAIN_OK)
        st = grain_memcpy(g, dev, bits, size);
    if (st == GRAIN_OK)
        st = grain_kernel_create(program, "grain_am_census", &k);
    if (st == GRAIN_OK)
        st = grain_kernel_set_arg_ptr(k, 1, dev);
    size_t one = 1;
    if (st == GRAIN_OK)
        st = grain_launch(k, 1, &one, &one);
    if (st == GRAIN_OK)
        st = grain_wait(g);
    if (st == GRAIN_OK)
        st = grain_memcpy(g, bits, dev, size);
    grain_kernel_destroy(k);
    if (dev != NULL)
        grain_mem_free(g, dev);
    return st;
}

grain_status_t grain_am_register_program(grain_t *g, grain_program_t *program)
{
    if (g == NULL || program == NULL || grain_program_grain(program) != g)
        return grain_fail(GRAIN_ERR_INVALID, "grain_am_register_program needs a handle and a program built "
                          "with it");
    if (g->kernels_in_flight)
        return grain_fail(GRAIN_ERR_STATE, "grain_am_register_program while kernels run; register first");
    uint32_t bits[GRAIN_MAX_HANDLERS / 32 + 1];
    grain_status_t st = census(g, program, bits, sizeof bits);
    if (st != GRAIN_OK)
        return st;
    if (bits[GRAIN_MAX_HANDLERS / 32] != 0)
        return grain_fail(GRAIN_ERR_INVALID, "grain_am_register_program: GRAIN_AM_HANDLERS names handler id "
                          "%u; ids must be below %u", bits[GRAIN_MAX_HANDLERS / 32] - 1, GRAIN_MAX_HANDLERS);
    uint32_t any = 0;
    for (unsigned w = 0; w < GRAIN_MAX_HANDLERS / 32; w++)
        any |= bits[w];
    if (any == 0)
        return grain_fail(GRAIN_ERR_INVALID, "grain_am_register_program: the program defines no handlers "
                          "(define GRAIN_AM_HANDLERS(X) before including grain/device.h)");
    struct grain_applier *applier = atomic_load_explicit(&g->applier, memory_order_acquire);
    if (applier == NULL) {
        if ((st = grain_applier_create(g, g->apply_stages, &applier)) != GRAIN_OK)
            return st;
        atomic_store_explicit(&g->applier, applier, memory_order_release);
    }
    if ((st = grain_applier_use(applier, program)) != GRAIN_OK)
        return st;
    memcpy(g->am.device, bits, sizeof g->am.device);
    return publish(g);
}
