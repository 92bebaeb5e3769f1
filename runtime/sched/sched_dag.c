/* SPDX-License-Identifier: BSD-3-Clause */
#include "runtime/sched/sched_dag.h"

#include <stdlib.h>
#include <string.h>

#include "services/log.h"

#define NONE UINT32_MAX

/* What later elements that use an array must follow. */
typedef struct array_state {
    uint32_t writer;   /* NONE: never written, or its writer retired */
    uint32_t *readers; /* since the writer */
    size_t n_readers, cap_readers;
} array_state_t;

struct sched_dag {
    array_state_t *arrays;
    size_t n_arrays;
    unsigned char *done; /* per element */
    size_t n_elements, cap_elements;
    uint32_t *parents;
    size_t n_parents, cap_parents;
};

grain_status_t sched_dag_create(sched_dag_t **dag_p)
{
    if ((*dag_p = calloc(1, sizeof **dag_p)) == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the scheduler's graph");
    return GRAIN_OK;
}

void sched_dag_destroy(sched_dag_t *dag)
{
    if (dag == NULL)
        return;
    for (size_t a = 0; a < dag->n_arrays; a++)
        free(dag->arrays[a].readers);
    free(dag->arrays);
    free(dag->done);
    free(dag->parents);
    free(dag);
}

int sched_reserve(void **p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 1;
    size_t want = *cap ? *cap : 8;
    while (want < n)
        want *= 2;
    void *grown = realloc(*p, want * size);
    if (grown == NULL)
        return 0;
    *p = grown;
    *cap = want;
    return 1;
}

static int parent(sched_dag_t *dag, uint32_t e)
{
    if (e == NONE || dag->done[e])
        return 1;
    for (size_t i = 0; i < dag->n_parents; i++) /* elements have few arguments */
        if (dag->parents[i] == e)
            return 1;
    if (!sched_reserve((void **)&dag->parents, &dag->cap_parents, dag->n_parents + 1, sizeof *dag->parents))
        return 0;
    dag->parents[dag->n_parents++] = e;
    return 1;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

grain_status_t sched_dag_add(sched_dag_t *dag, const sched_arg_t *args, size_t n_args, uint32_t *element_p,
                             const uint32_t **parents_p, size_t *n_parents_p)
{
    uint32_t e = (uint32_t)dag->n_elements;
    if (dag->n_elements == NONE)
        return grain_fail(GRAIN_ERR_INVALID, "the scheduler's graph holds %u elements already", NONE);
    for (size_t i = 0; i < n_args; i++)
        if (args[i].access == 0 || (args[i].access & ~(SCHED_READ | SCHED_WRITE)) != 0)
            return grain_fail(GRAIN_ERR_INVALID, "argument %zu: access %u is not read, write or both", i,
                              args[i].access);
    size_t most = 0;
    for (size_t i = 0; i < n_args; i++)
        most = args[i].array + 1 > most ? args[i].array + 1 : most;
    if (!sched_reserve((void **)&dag->done, &dag->cap_elements, dag->n_elements + 1, 1))
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the scheduler's graph");
    if (most > dag->n_arrays) {
        array_state_t *grown = realloc(dag->arrays, most * sizeof *grown);
        if (grown == NULL)
            return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the scheduler's graph");
        for (size_t a = dag->n_arrays; a < most; a++)
            grown[a] = (array_state_t){.writer = NONE};
        dag->arrays = grown;
        dag->n_arrays = most;
    }
    dag->n_parents = 0;
    /* Parents first, from every argument's state before this element. */
    for (size_t i = 0; i < n_args; i++) {
        array_state_t *s = &dag->arrays[args[i].array];
        if (!parent(dag, s->writer))
            return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the scheduler's graph");
        for (size_t r = 0; (args[i].access & SCHED_WRITE) && r < s->n_readers; r++)
            if (!parent(dag, s->readers[r]))
                return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the scheduler's graph");
    }
    /* Then the arrays' new state: an array this element writes (through
     * any of its arguments) has it as its writer alone. */
    for (size_t i = 0; i < n_args; i++) {
        array_state_t *s = &dag->arrays[args[i].array];
        if (args[i].access & SCHED_WRITE) {
            s->writer = e;
            s->n_readers = 0;
        }
    }
    for (size_t i = 0; i < n_args; i++) {
        array_state_t *s = &dag->arrays[args[i].array];
        /* Written by this element, or read through an earlier argument. */
        if (s->writer == e || (s->n_readers > 0 && s->readers[s->n_readers - 1] == e))
            continue;
        if (s->n_readers == s->cap_readers) { /* retired readers order nothing: drop them first */
            size_t kept = 0;
            for (size_t r = 0; r < s->n_readers; r++)
                if (!dag->done[s->readers[r]])
                    s->readers[kept++] = s->readers[r];
            s->n_readers = kept;
        }
        if (!sched_reserve((void **)&s->readers, &s->cap_readers, s->n_readers + 1, sizeof *s->readers))
            return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for the scheduler's graph");
        s->readers[s->n_readers++] = e;
    }
    dag->done[e] = 0;
    dag->n_elements++;
    if (dag->n_parents > 1)
        qsort(dag->parents, dag->n_parents, sizeof *dag->parents, cmp_u32);
    *element_p = e;
    *parents_p = dag->parents;
    *n_parents_p = dag->n_parents;
    return GRAIN_OK;
}

void sched_dag_retire(sched_dag_t *dag, uint32_t element)
{
    if (element < dag->n_elements)
        dag->done[element] = 1;
}
